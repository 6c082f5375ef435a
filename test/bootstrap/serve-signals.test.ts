/**
 * `windsock serve`'s signals (src/server.ts): the handlers are in before the start, so a SIGTERM
 * sent the moment the "listening" line appears (what orchestrators and scripts do) drains the
 * service and exits 0. Installed after the start, they left a window in which the signal's
 * default action ended the process: a fault test saw a service "exited by SIGTERM" under load.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loopbackConfig } from '../support/loopback-config';
import { serve } from '../../src/server';

describe('windsock serve: a signal during the start', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-serve-signals-'));
  const listeners = { SIGTERM: process.listeners('SIGTERM'), SIGINT: process.listeners('SIGINT') };
  let exited = false;

  afterAll(async () => {
    // A failed run leaves the service up: stopped through its handler, once it has one, so jest can end.
    for (let i = 0; !exited && i < 100; i++) {
      if (process.listeners('SIGTERM').length > listeners.SIGTERM.length) process.emit('SIGTERM', 'SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    jest.restoreAllMocks();
    // The handler serve() left for the other signal.
    for (const signal of ['SIGTERM', 'SIGINT'] as const) for (const l of process.listeners(signal)) if (!listeners[signal].includes(l)) process.off(signal, l);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stops the service once it has started: drained and exit 0, not ended by the signal', async () => {
    // Its first-start token would be printed for the terminal: an admin token of its own instead.
    const config = loopbackConfig(dir, { WINDSOCK_ADMIN_TOKEN: crypto.randomBytes(24).toString('hex') });
    const exitCode = new Promise<number | string | null | undefined>((resolve) => {
      jest.spyOn(process, 'exit').mockImplementation((code) => {
        exited = true;
        resolve(code);
        return undefined as never;
      });
    });
    const serving = serve(config);
    // serve() is inside its start (it awaits the database): the handler is there already.
    expect(process.listeners('SIGTERM').length).toBe(listeners.SIGTERM.length + 1);
    process.emit('SIGTERM', 'SIGTERM');
    await serving;
    expect(await exitCode).toBe(0);
  });
});
