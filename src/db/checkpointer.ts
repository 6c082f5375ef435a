/**
 * SQLite WAL checkpoints off the event loop. With the default `wal_autocheckpoint`, the commit
 * that takes the WAL past 1,000 pages copies the WAL into the database file before it returns,
 * synchronously (better-sqlite3 runs every statement on the calling thread): the commit of a
 * 50 MB upload held the event loop for about 100 ms doing it (BENCHMARKS.md, "Uploads and the
 * event loop"). So the service's connection checkpoints never (`wal_autocheckpoint = 0`), and
 * a worker thread with a connection of its own runs a PASSIVE checkpoint every half second: it
 * copies what no reader still needs and waits for no one, while the service goes on reading and
 * writing. The next write after a complete checkpoint starts the WAL over, so the WAL stays as
 * small as it was. Should the worker stop, the connection checkpoints for itself again.
 */
import { Worker } from 'node:worker_threads';

export const CHECKPOINT_INTERVAL_MS = 500;

// Plain JavaScript evaluated as the worker's source, so it runs the same from dist/ and under
// ts-jest. A checkpoint that cannot run now (another process holds a lock) runs at the next tick.
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {}
  parentPort.postMessage('checkpointed');
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface CheckpointedConnection {
  pragma(s: string): unknown;
}

export class WalCheckpointer {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  /** Takes over checkpointing of `file` from `conn` (the service's connection to it). */
  constructor(conn: CheckpointedConnection, file: string, intervalMs = CHECKPOINT_INTERVAL_MS) {
    conn.pragma('wal_autocheckpoint = 0');
    this.worker = new Worker(SOURCE, { eval: true, workerData: { driver: require.resolve('better-sqlite3'), file, intervalMs } });
    // It never keeps a process alive (a CLI command that does not close its database still exits).
    this.worker.unref();
    let stopping = false;
    this.exited = new Promise((resolve) => {
      this.worker.once('exit', () => {
        if (!stopping) conn.pragma('wal_autocheckpoint = 1000');
        resolve();
      });
    });
    this.worker.once('error', () => undefined);
    this.stop = async () => {
      stopping = true;
      this.worker.postMessage('stop');
      await this.exited;
    };
  }

  /** Closes the worker's connection; the service's own close then does SQLite's last checkpoint. */
  readonly stop: () => Promise<void>;

  /** Resolves when the worker's next checkpoint round has run (tests wait on it, not on time). */
  nextRound(): Promise<void> {
    return new Promise((resolve) => this.worker.once('message', () => resolve()));
  }
}
