/**
 * Test controls for consumers' test runs (WINDSOCK_TEST_CONTROLS=true): reset the database to
 * the snapshot taken after start, and read or set the service's clock. Who may call them (the
 * installation admin token only) is checked here too, so the HTTP side stays thin.
 */
import { ForbiddenError, UnauthorizedError, ValidationError } from '../core/errors';
import { clock, type ClockMode } from '../core/clock';
import type { Principal } from '../core/identity';
import type { AccessTokenService } from '../access-token/service';
import type { Knex } from 'knex';
import { Snapshot, type RestoreResult } from './snapshot-repository';

export interface ClockState {
  mode: ClockMode['kind'];
  now: string;
  at: string | null;
  offset_seconds: number | null;
}

export interface ClockChange {
  mode?: ClockMode['kind'];
  at?: string;
  offset_seconds?: number;
  advance_seconds?: number;
}

export class TestControls {
  private snapshot: Snapshot | null = null;
  /** Whether the snapshot holds a fixture file's state (else the first start's). */
  private withFixtures = false;

  constructor(
    private readonly db: Knex,
    private readonly tokens: AccessTokenService,
  ) {}

  /** Takes the state a reset returns to: call once after start (fixtures loaded, admin token made). */
  async takeSnapshot(withFixtures: boolean): Promise<void> {
    this.snapshot = await Snapshot.take(this.db);
    this.withFixtures = withFixtures;
  }

  /** Drops the snapshot's copies (Postgres: its schema; SQLite: its file). */
  async dispose(): Promise<void> {
    await this.snapshot?.dispose(this.db);
    this.snapshot = null;
  }

  /** The caller must hold the installation admin token: 403 for any other token. */
  async authorize(principal: Principal | undefined): Promise<void> {
    if (!principal) throw new UnauthorizedError('missing or malformed Authorization header');
    const admin = await this.tokens.installationAdmin();
    if (!admin || admin.id !== principal.token.id) throw new ForbiddenError();
  }

  async reset(): Promise<RestoreResult & { state: 'fixtures' | 'bootstrap'; duration_ms: number }> {
    if (!this.snapshot) throw new Error('reset before the snapshot was taken');
    const started = process.hrtime.bigint();
    const restored = await this.snapshot.restore(this.db);
    // Principals cached by bearer would outlive tokens and memberships the reset removed.
    this.tokens.clearCache();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    return { state: this.withFixtures ? 'fixtures' : 'bootstrap', ...restored, duration_ms: Math.round(ms * 100) / 100 };
  }

  clockState(): ClockState {
    const mode = clock.mode();
    return {
      mode: mode.kind,
      now: clock.now().toISOString(),
      at: mode.kind === 'frozen' ? mode.at.toISOString() : null,
      offset_seconds: mode.kind === 'offset' ? mode.ms / 1000 : null,
    };
  }

  setClock(change: ClockChange): ClockState {
    if (change.at !== undefined && change.mode !== 'frozen') throw ValidationError.field('at', 'is only taken with mode frozen');
    if (change.offset_seconds !== undefined && change.mode !== 'offset') throw ValidationError.field('offset_seconds', 'is only taken with mode offset');
    if (change.mode === 'offset' && change.offset_seconds === undefined) throw ValidationError.field('offset_seconds', 'is required with mode offset');
    if (change.mode === 'real') clock.set({ kind: 'real' });
    if (change.mode === 'frozen') clock.set({ kind: 'frozen', at: change.at !== undefined ? new Date(change.at) : clock.now() });
    if (change.mode === 'offset') clock.set({ kind: 'offset', ms: Math.round(change.offset_seconds! * 1000) });
    if (change.advance_seconds !== undefined) clock.advance(Math.round(change.advance_seconds * 1000));
    return this.clockState();
  }
}
