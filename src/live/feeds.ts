/**
 * The change feed a process gets (chosen in src/services.ts): with REDIS_URL, Redis pub/sub;
 * else on Postgres, LISTEN/NOTIFY on the database's own channel; on SQLite (one process owns the
 * database), this process alone. The cross-instance feeds start connecting at once and deliver
 * this process's own changes meanwhile; `ready()` resolves once they hear the other instances.
 */
import { PostgresChannel } from '../db/listen';
import { closeRedis, connectRedis, connectRedisSubscriber, RedisUnavailableError, type RedisClient, type RedisSettings } from '../db/redis';
import { LocalChangeFeed, RelayedChangeFeed, type ChangeFeed, type FeedErrorReporter, type Relay } from './changes';

/** The Postgres channel of the change feed. */
export const CHANGES_CHANNEL = 'windsock_changes';

/** Redis pub/sub on `<prefix>changes`: a publisher and a subscriber connection (a subscribing connection can do nothing else). */
export class RedisRelay implements Relay {
  private readonly channel: string;

  constructor(
    private readonly pub: RedisClient,
    private readonly sub: RedisClient,
    prefix: string,
  ) {
    this.channel = `${prefix}changes`;
  }

  async send(message: string): Promise<void> {
    try {
      if (this.pub.status === 'wait') await this.pub.connect();
      await this.pub.publish(this.channel, message);
    } catch (err) {
      throw new RedisUnavailableError(err);
    }
  }

  async start(onMessage: (message: string) => void): Promise<void> {
    this.sub.on('message', (channel: string, message: string) => {
      if (channel === this.channel) onMessage(message);
    });
    await this.sub.subscribe(this.channel);
    if (this.pub.status === 'wait') await this.pub.connect();
  }

  async close(): Promise<void> {
    await Promise.all([this.pub, this.sub].map(closeRedis));
  }
}

export interface FeedChoice {
  database: { kind: 'sqlite' | 'postgres'; url: string };
  redis?: RedisSettings;
  report: FeedErrorReporter;
}

/** A feed that crosses instances, and what it waits on to hear them. */
export interface StartedFeed {
  feed: ChangeFeed;
  /** Resolves once the other instances' changes are heard (at once for the local feed). */
  ready: Promise<void>;
  /** Postgres: the listening channel (tests terminate its connection). */
  channel?: PostgresChannel;
}

export function startChangeFeed(o: FeedChoice): StartedFeed {
  if (o.redis) {
    const relay = new RedisRelay(
      connectRedis(o.redis.url, 'windsock-changes-pub'),
      connectRedisSubscriber(o.redis.url, 'windsock-changes-sub'),
      o.redis.prefix,
    );
    const feed = new RelayedChangeFeed(relay, o.report);
    return { feed, ready: started(feed, o.report) };
  }
  if (o.database.kind === 'postgres') {
    const channel = new PostgresChannel({ url: o.database.url, channel: CHANGES_CHANNEL, report: o.report });
    const feed = new RelayedChangeFeed(channel, o.report);
    return { feed, ready: started(feed, o.report), channel };
  }
  return { feed: new LocalChangeFeed(o.report), ready: Promise.resolve() };
}

/** Starts hearing; a start that fails is reported (the feed still serves this process). */
function started(feed: RelayedChangeFeed, report: FeedErrorReporter): Promise<void> {
  return feed.start().catch((err: unknown) => report(err, 'change feed start'));
}
