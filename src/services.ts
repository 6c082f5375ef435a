/**
 * The composition root: one Knex instance, the keys, and every repository and service wired
 * together. The server, the CLI and the tests all build their world here.
 */
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import { AccessTokenRepository } from './access-token/repository';
import { AccessTokenService } from './access-token/service';
import { AgentRepository } from './agents/repository';
import { AgentService } from './agents/service';
import { ArtifactRepository } from './artifacts/repository';
import { ArtifactService, DEFAULT_ARTIFACT_SETTINGS, type ArtifactSettings } from './artifacts/service';
import { DiskArtifactStorage, type ArtifactStorage } from './artifacts/storage';
import type { S3StoreSettings } from './artifacts/s3-storage';
import { AgentWorkService, DEFAULT_JOB_LOG_LIMIT_BYTES } from './builds/jobs/agent-work';
import { StepService } from './builds/jobs/steps';
import { OidcTokenService } from './builds/jobs/oidc-tokens';
import { OidcIssuer } from './security/oidc';
import { secretBox } from './security/secret-box';
import { BuildProgress } from './builds/progress/service';
import { BuildRepository } from './builds/repository';
import { BuildService } from './builds/service';
import { MetaDataService } from './builds/meta-data';
import { AnnotationRepository } from './annotations/repository';
import { AnnotationService } from './annotations/service';
import { ClusterRepository } from './clusters/repository';
import { ClusterService } from './clusters/service';
import { serializeClusterToken } from './clusters/serialize';
import { serializeHeldJobs } from './builds/jobs/serialize';
import type { Config } from './config';
import { createKnex, type DatabaseKind } from './db/knex';
import { DeliveryService } from './incoming-webhooks/service';
import { OpenPullRequestRepository } from './incoming-webhooks/repository';
import { JobLogRepository } from './builds/jobs/log-repository';
import { JobRepository } from './builds/jobs/repository';
import { JobService } from './builds/jobs/service';
import { PipelineUploadService } from './builds/jobs/pipeline-upload';
import { StepUploadRepository } from './builds/jobs/step-upload-repository';
import { signer, stepSigningKey } from './builds/jobs/plan';
import { DEFAULT_SWEEP_SETTINGS, heartbeatWriteEveryMs, Sweeper, type SweepSettings } from './builds/jobs/sweeper';
import type { Logger } from './http/middleware/logger';
import { RateLimiter, type RateLimitSettings } from './http/middleware/rate-limit';
import { AuditRepository } from './audit/repository';
import { AuditLog } from './audit/service';
import { InvitationRepository } from './invitations/repository';
import { InvitationService } from './invitations/service';
import { OrganizationRepository } from './organizations/repository';
import { OrganizationService } from './organizations/service';
import { gitHubHooks } from './pipelines/github-hooks';
import { PipelineRepository } from './pipelines/repository';
import { PipelineService } from './pipelines/service';
import { BadgeRepository } from './badges/repository';
import { BadgeService } from './badges/service';
import { parseConfiguration } from './pipelines/configuration';
import { PipelineTemplateRepository } from './pipeline-templates/repository';
import { PipelineTemplateService } from './pipeline-templates/service';
import { EmojiRepository } from './emojis/repository';
import { EmojiService } from './emojis/service';
import { PipelineScheduleRepository } from './pipeline-schedules/repository';
import { DEFAULT_SCHEDULER_SETTINGS, Scheduler, type SchedulerSettings } from './pipeline-schedules/scheduler';
import { PipelineScheduleService } from './pipeline-schedules/service';
import { RuleRepository } from './rules/repository';
import { PipelineTriggerRepository } from './pipeline-triggers/repository';
import { PipelineTriggerService } from './pipeline-triggers/service';
import { RuleService } from './rules/service';
import { RepositoryConnectionService } from './repository-connections/service';
import { SuiteRepository } from './suites/repository';
import { SuiteResultsRepository } from './suites/results-repository';
import { SuiteService } from './suites/service';
import { TeamRepository } from './teams/repository';
import { TeamService } from './teams/service';
import { UploadRepository } from './uploads/repository';
import { UploadService } from './uploads/service';
import { keysFromSecret, loadOrCreateSecret, type Keys } from './security/keys';
import type { ScrapeCounts } from './metrics/registry';
import { errorMessage } from './core/guards';
import { DEFAULT_OUTBOUND_SETTINGS, Outbound, outboundSender, type OutboundSettings } from './security/outbound';
import { UserRepository } from './user/repository';
import { NotificationServiceRepository } from './notification-services/repository';
import { NotificationServiceService } from './notification-services/service';
import { commitStatusConfig, type CommitStatusSettings } from './notifications/commit-status';
import { conditionOf } from './notifications/conditions';
import { outboundSend } from './notifications/http';
import { COMMIT_STATUS, commitStatusProvider } from './notifications/providers/commit-status';
import { NOTIFY, notifyProvider } from './notifications/providers/notify';
import { openTelemetryProvider, slackProvider } from './notifications/providers/services';
import { webhookProvider } from './notifications/providers/webhook';
import { OutboxRepository } from './notifications/repository';
import { DEFAULT_NOTIFICATION_SETTINGS, NotificationService, type NotificationSettings } from './notifications/service';
import { NotificationWorker } from './notifications/worker';
import { LocalChangeFeed, type ChangeFeed } from './live/changes';
import { startChangeFeed } from './live/feeds';
import { connectRedis, RedisCounters, type RedisSettings } from './db/redis';
import { WebSessionRepository } from './web/session-repository';
import { WebSessions } from './web/sessions';
import { LiveStreams } from './web/live';

export interface Services {
  db: Knex;
  /** The same services with every query on `trx` (the fixture loader writes a whole file in one transaction). */
  onTransaction(trx: Knex.Transaction): Services;
  keys: Keys;
  users: UserRepository;
  orgs: OrganizationRepository;
  organizations: OrganizationService;
  /** The organizations' audit log: what the services record in their transactions, and its reads. */
  audit: AuditLog;
  /** An organization's invitations, and their acceptance when an invited user signs up. */
  invitations: InvitationService;
  tokens: AccessTokenService;
  pipelines: PipelineService;
  badges: BadgeService;
  builds: BuildService;
  agents: AgentService;
  /** The agent's side of a job (the agent API's polls and job moves). */
  agentWork: AgentWorkService;
  /** `buildkite-agent step get|update|cancel`, `build cancel`. */
  steps: StepService;
  /** The issuer of jobs' OIDC tokens, and `buildkite-agent oidc request-token`. */
  oidcIssuer: OidcIssuer;
  oidcTokens: OidcTokenService;
  jobs: JobService;
  /** Every write that moves builds and jobs along (see src/builds/progress/service.ts). */
  progress: BuildProgress;
  pipelineUploads: PipelineUploadService;
  suites: SuiteService;
  uploads: UploadService;
  deliveries: DeliveryService;
  /** Annotations of builds and jobs (REST and `buildkite-agent annotate`). */
  annotations: AnnotationService;
  /** A build's meta-data as `buildkite-agent meta-data` reads and writes it. */
  metaData: MetaDataService;
  rateLimiter: RateLimiter;
  /** Artifacts: the agent's uploads and searches, the REST reads and deletes. */
  artifacts: ArtifactService;
  /** Clusters, their queues, agent tokens, maintainers and secrets. */
  clusters: ClusterService;
  /** Started by the server process only. */
  sweeper: Sweeper;
  /** Pipeline templates: an organization's shared step configurations. */
  pipelineTemplates: PipelineTemplateService;
  /** An organization's custom emojis. */
  emojis: EmojiService;
  /** A pipeline's cron schedules (REST), and the builds they create when due. */
  pipelineSchedules: PipelineScheduleService;
  /** An organization's rules: what one pipeline may do to another across clusters. */
  rules: RuleService;
  /** A pipeline's incoming webhook endpoints (`/deliver/bktr_...`) and their deliveries. */
  pipelineTriggers: PipelineTriggerService;
  /** Creates the builds of due pipeline schedules; started by the server process only. */
  scheduler: Scheduler;
  /** An organization's repository connections (the configured source-control providers) and their repositories. */
  repositoryConnections: RepositoryConnectionService;
  /** Teams, their members and grants, and the organizations' members (REST and `windsock team`). */
  teams: TeamService;
  /** The one client for requests Windsock sends out (webhooks, Slack, OTLP, commit statuses): SSRF-safe. */
  outbound: Outbound;
  /** An organization's notification services (REST and `windsock service`), and what the delivery side reads of them. */
  notificationServices: NotificationServiceService;
  /** The outbox's fan-out and deliveries, and their history (see src/notifications/service.ts). */
  notifications: NotificationService;
  /** Fans out and delivers notifications; started by the server process only. */
  notificationWorker: NotificationWorker;
  /** What `GET /metrics` counts at scrape time, from the areas' repositories. */
  metricsCounts: ScrapeCounts;
  /** The web pages' sign-in sessions. */
  webSessions: WebSessions;
  /** What changed in builds, jobs and logs, for live pages (src/live/changes.ts): this process's, and the other instances' where the feed crosses them. */
  changes: ChangeFeed;
  /** The build pages' open live streams (src/web/live.ts): the server's shutdown ends them. */
  liveStreams: LiveStreams;
  /**
   * The repositories the fixture loader (src/fixtures/load.ts) writes a file's history through:
   * states and times that happened before "now", which the state machine cannot give.
   */
  history: { agents: AgentRepository; builds: BuildRepository; jobs: JobRepository; jobLogs: JobLogRepository; outbox: OutboxRepository };
}

export interface ServiceOptions {
  database: { kind: DatabaseKind; url: string; schema?: string };
  secret: string;
  publicUrl: string;
  github: Config['github'];
  githubEnterprise: Config['githubEnterprise'];
  logger: Logger;
  /** See AccessTokenService; default 1000. */
  tokenCacheMs?: number;
  /** Default: no limits. */
  rateLimits?: RateLimitSettings;
  /** The rate limiter's clock (tests). */
  now?: () => number;
  /** Default: DEFAULT_SWEEP_SETTINGS. */
  sweep?: SweepSettings;
  /** Largest log of one job (Config.jobLogLimitBytes); default 1,024 MiB. */
  jobLogLimitBytes?: number;
  /** Where artifact content is kept on disk, and its limits (Config.artifacts). Default: a fresh directory under the system's temp directory (tests), DEFAULT_ARTIFACT_SETTINGS. */
  artifacts?: Partial<{ dir: string; s3: S3StoreSettings } & ArtifactSettings>;
  /** How often the scheduler looks for due pipeline schedules. Default: DEFAULT_SCHEDULER_SETTINGS. Due is judged by the service's clock (core/clock.ts). */
  scheduler?: SchedulerSettings;
  /** Outbound requests (Config.outbound). Default: DEFAULT_OUTBOUND_SETTINGS (private destinations refused). */
  outbound?: OutboundSettings;
  /** Attempts, back-off, parallel deliveries, retention (Config.notifications). Default: DEFAULT_NOTIFICATION_SETTINGS. */
  notifications?: Partial<NotificationSettings>;
  /** Where commit statuses go (Config's github, githubEnterprise, gitlab, bitbucket). Default: GitHub and GitHub Enterprise from `github`/`githubEnterprise`, no GitLab or Bitbucket credentials. */
  commitStatuses?: Partial<CommitStatusSettings>;
  /** Use this Knex (a transaction: onTransaction) instead of creating one from `database`. */
  knex?: Knex;
  /** The change feed (src/live/): default, one of this process alone (LocalChangeFeed). */
  changes?: ChangeFeed;
  /** Rate limit counters in Redis (REDIS_URL) instead of the database. */
  redis?: RedisSettings;
}

/**
 * The S3 artifact store. Its module, and with it the AWS SDK (about 130 ms to load), is required
 * here, when the store is S3: a start on the local disk (and every CLI command) does not load it.
 * `typeof import` types the CommonJS require as the import would.
 */
function s3Storage(settings: S3StoreSettings, outbound: OutboundSettings, artifactsDir: string): ArtifactStorage {
  const s3: typeof import('./artifacts/s3-storage') = require('./artifacts/s3-storage');
  return s3.createS3Storage(settings, outbound, s3.s3StagingDir(artifactsDir));
}

export function createServices(o: ServiceOptions): Services {
  const db = o.knex ?? createKnex({ ...o.database, logger: o.logger });
  const changes = o.changes ?? new LocalChangeFeed((err, what) => o.logger.warn({ err }, what));
  const keys = keysFromSecret(o.secret);
  const orgs = new OrganizationRepository(db);
  const audit = new AuditLog(db, new AuditRepository(db));
  const organizations = new OrganizationService(orgs, audit);
  const invitations = new InvitationService(db, new InvitationRepository(db), organizations, audit);
  const clusterRepository = new ClusterRepository(db);
  const clusters = new ClusterService(clusterRepository, keys, audit);
  const pipelineRepository = new PipelineRepository(db);
  // Every outgoing request of the server goes through this one transport (src/security/outbound.ts).
  const outboundSettings = o.outbound ?? DEFAULT_OUTBOUND_SETTINGS;
  const outbound = new Outbound(outboundSettings);
  // Artifact content: on the local disk, or in an S3-compatible bucket (ARTIFACTS_STORE=s3://...).
  const artifactsDir = o.artifacts?.dir ?? path.join(os.tmpdir(), `windsock-artifacts-${crypto.randomUUID()}`);
  const artifactStorage = o.artifacts?.s3 ? s3Storage(o.artifacts.s3, outboundSettings, artifactsDir) : new DiskArtifactStorage(artifactsDir);
  // Below pipelines: the pipelines' YAML parser is handed in, and pipelines ask it which templates may be assigned.
  const pipelineTemplates = new PipelineTemplateService(new PipelineTemplateRepository(db), parseConfiguration, audit);
  const pipelines = new PipelineService(pipelineRepository, organizations, keys, {
    publicUrl: o.publicUrl,
    github: gitHubHooks({ github: o.github, github_enterprise: o.githubEnterprise }, o.logger, outboundSender(outbound)),
    templates: pipelineTemplates,
    clusters,
    audit,
  });
  const suites = new SuiteRepository(db);
  const sign = signer(stepSigningKey(keys));
  const jobs = new JobRepository(db);
  const logs = new JobLogRepository(db);
  const buildRepository = new BuildRepository(db);
  const users = new UserRepository(db);
  const agents = new AgentRepository(db);
  const ruleRepository = new RuleRepository(db);
  const rules = new RuleService(ruleRepository, pipelines);
  const progress = new BuildProgress(
    db,
    {
      builds: buildRepository,
      jobs,
      logs,
      agents,
      pipelines: pipelineRepository,
      users,
      clusters: clusterRepository,
      rules: ruleRepository,
      organizations: orgs,
    },
    sign,
    changes,
  );
  const builds = new BuildService(buildRepository, pipelines, progress);
  // A forced stop cancels the agent's job through build progression, above the agents' area.
  const agentService = new AgentService(
    agents,
    (agent) => agentWork.cancelHeldJob(agent),
    clusters,
    audit,
    heartbeatWriteEveryMs(o.sweep ?? DEFAULT_SWEEP_SETTINGS),
  );
  const suiteService = new SuiteService(suites, new SuiteResultsRepository(db), organizations, builds, pipelines, secretBox(keys, 'suite-api-tokens'), audit);
  const agentWork: AgentWorkService = new AgentWorkService(jobs, logs, progress, agentService, o.jobLogLimitBytes ?? DEFAULT_JOB_LOG_LIMIT_BYTES);
  const jobService = new JobService(jobs, logs, progress, builds, organizations, agentService);
  const teams = new TeamService(db, new TeamRepository(db), pipelines, suiteService, audit);
  // Above pipelines, teams and clusters: a service's scope_uuids are checked through theirs.
  const notificationServices = new NotificationServiceService(
    new NotificationServiceRepository(db),
    { pipelines, teams, clusters },
    keys,
    // A new webhook service is pinged (`notifications` is made below: it reads services).
    (created) => notifications.ping(created),
    audit,
  );
  const notificationSettings: NotificationSettings = {
    ...DEFAULT_NOTIFICATION_SETTINGS,
    ...o.notifications,
    // A lease outlives the request it covers: a delivery is never attempted twice at once.
    leaseMs: outboundSettings.timeoutMs + 5_000,
  };
  const providerSettings: CommitStatusSettings = {
    github: o.github,
    githubEnterprise: o.githubEnterprise,
    gitlab: { apiUrl: 'https://gitlab.com/api/v4', token: undefined },
    bitbucket: { apiUrl: 'https://api.bitbucket.org/2.0', token: undefined, username: undefined, appPassword: undefined },
    ...o.commitStatuses,
  };
  const statusConfig = commitStatusConfig(providerSettings);
  const outbox = new OutboxRepository(db);
  const notifications: NotificationService = new NotificationService(
    db,
    outbox,
    {
      publicUrl: o.publicUrl,
      build: (id) => builds.findWithJobsById(id),
      jobs: (ids) => jobService.findForSystem(ids),
      pipelines: (ids) => pipelines.findByIdsForSystem(ids),
      badgeUrl: (id) => pipelines.badgeUrl(id),
      agents: (ids) => agentService.byIds(ids),
      organization: (id) => organizations.findById(id),
      heldJob: async (agent) => (agent.jobId ? (serializeHeldJobs(await agentWork.heldJobs([agent]), o.publicUrl).get(agent.jobId) ?? null) : null),
      clusterToken: async (id, orgSlug) => {
        const token = await clusters.findTokenForSystem(id);
        return token ? { clusterId: token.clusterId, json: serializeClusterToken(token, o.publicUrl, orgSlug) } : null;
      },
      teamIdsOf: (id) => pipelines.teamIdsOf(id),
      previousFinishedState: (b) => builds.previousFinishedState(b),
      teamSlugsOf: (userId, organizationId) => orgs.teamSlugsOf(userId, organizationId),
    },
    notificationServices,
    {
      webhook: webhookProvider(),
      slack: slackProvider(),
      // The SDK's own export deadline a little past the transport's, so the transport's (which names the reason) ends it.
      open_telemetry_tracing: openTelemetryProvider(outboundSettings.timeoutMs + 1_000),
      [NOTIFY]: notifyProvider(conditionOf),
      [COMMIT_STATUS]: commitStatusProvider(statusConfig, conditionOf),
    },
    outboundSend(outbound),
    notificationSettings,
  );
  const pipelineTriggers = new PipelineTriggerService(new PipelineTriggerRepository(db), pipelines, builds, organizations, keys);
  // A repositories listing reads whole pages of a provider's API (100 repositories are far more than
  // a webhook's answer): the same guarded transport, allowed a larger answer.
  const providerApi = new Outbound({ ...outboundSettings, maxResponseBytes: Math.max(outboundSettings.maxResponseBytes, 16 * 1024 * 1024) });
  const repositoryConnections = new RepositoryConnectionService(providerSettings, pipelines, outboundSender(providerApi));
  const oidcIssuer = new OidcIssuer(keys, o.publicUrl);
  const tokens = new AccessTokenService(new AccessTokenRepository(db), keys, o.tokenCacheMs);
  const pipelineSchedules = new PipelineScheduleService(new PipelineScheduleRepository(db), pipelines, organizations, progress, audit);
  return {
    db,
    onTransaction: (trx) => createServices({ ...o, knex: trx, changes }),
    keys,
    users,
    orgs,
    organizations,
    audit,
    invitations,
    tokens,
    pipelines,
    badges: new BadgeService(new BadgeRepository(db), (id) => pipelines.badgeKey(id)),
    builds,
    agents: agentService,
    agentWork,
    steps: new StepService(jobs, agentWork, buildRepository, progress),
    oidcIssuer,
    oidcTokens: new OidcTokenService(agentWork, buildRepository, clusterRepository, oidcIssuer),
    jobs: jobService,
    progress,
    pipelineUploads: new PipelineUploadService(jobs, progress, builds, pipelines, sign, new StepUploadRepository(db)),
    suites: suiteService,
    uploads: new UploadService(suiteService, new UploadRepository(db), o.publicUrl, oidcIssuer),
    deliveries: new DeliveryService(pipelines, builds, organizations, o.publicUrl, new OpenPullRequestRepository(db)),
    annotations: new AnnotationService(db, new AnnotationRepository(db), builds, jobService, agentWork),
    metaData: new MetaDataService(buildRepository, progress, agentWork),
    rateLimiter: new RateLimiter(
      db,
      o.rateLimits ?? { perOrganization: 0, perUser: 0, failedAuthPerAddress: 0 },
      o.now,
      o.redis && !o.knex?.isTransaction ? new RedisCounters(connectRedis(o.redis.url, 'windsock-rate-limits'), o.redis.prefix) : undefined,
    ),
    artifacts: new ArtifactService(
      new ArtifactRepository(db),
      // Made when the first content arrives: a context that stores none leaves no directory behind.
      artifactStorage,
      builds,
      agentWork,
      keys,
      // The limits and origin only: the store's settings (its secret) stay with the store.
      {
        ...DEFAULT_ARTIFACT_SETTINGS,
        ...(o.artifacts?.maxFileBytes !== undefined ? { maxFileBytes: o.artifacts.maxFileBytes } : {}),
        ...(o.artifacts?.maxJobBytes !== undefined ? { maxJobBytes: o.artifacts.maxJobBytes } : {}),
        ...(o.artifacts?.origin !== undefined ? { origin: o.artifacts.origin } : {}),
      },
      rules,
      o.logger,
    ),
    clusters,
    sweeper: new Sweeper(agentService, jobs, progress, o.sweep ?? DEFAULT_SWEEP_SETTINGS, o.logger),
    pipelineTemplates,
    emojis: new EmojiService(new EmojiRepository(db)),
    pipelineSchedules,
    rules,
    pipelineTriggers,
    scheduler: new Scheduler(pipelineSchedules, o.scheduler ?? DEFAULT_SCHEDULER_SETTINGS, o.logger),
    repositoryConnections,
    teams,
    notificationServices,
    outbound,
    notifications,
    notificationWorker: new NotificationWorker(notifications, o.logger),
    metricsCounts: {
      jobsByStateAndRules: (states) => jobs.countByStateAndRules(states),
      queueKeys: () => clusterRepository.allQueueKeys(),
      agentsByConnectionState: () => agents.countByConnectionState(),
      pendingNotifications: () => outbox.pendingCounts(),
    },
    webSessions: new WebSessions(new WebSessionRepository(db), tokens),
    changes,
    liveStreams: new LiveStreams(),
    history: { agents, builds: buildRepository, jobs, jobLogs: logs, outbox },
  };
}

/**
 * Services for the process's own settings (the server and the CLI). `live`: the server's change
 * feed, which hears the other instances (Redis with REDIS_URL, else LISTEN/NOTIFY on Postgres);
 * otherwise (the CLI) changes reach this process only, and pages elsewhere see them on their
 * next heartbeat.
 */
export function servicesFromConfig(config: Config, logger: Logger, opts: { live?: boolean } = {}): Services {
  // What a feed reports is mostly its connection coming and going (an outage, a restart of Postgres
  // or Redis, retried with back-off): one line each, with the reason, not a stack per attempt.
  const report = (err: unknown, what: string) => logger.warn({ reason: errorMessage(err) }, what);
  const changes = opts.live
    ? startChangeFeed({ database: { kind: config.databaseKind, url: config.databaseUrl }, redis: config.redis, report }).feed
    : undefined;
  return createServices({
    changes,
    redis: config.redis,
    database: { kind: config.databaseKind, url: config.databaseUrl },
    secret: loadOrCreateSecret(config.jwtSecret, config.dataDir),
    publicUrl: config.publicUrl,
    github: config.github,
    githubEnterprise: config.githubEnterprise,
    logger,
    tokenCacheMs: config.tokenCacheMs,
    rateLimits: config.rateLimits,
    sweep: config.sweep,
    scheduler: config.scheduler,
    jobLogLimitBytes: config.jobLogLimitBytes,
    artifacts: config.artifacts,
    outbound: config.outbound,
    notifications: config.notifications,
    commitStatuses: { gitlab: config.gitlab, bitbucket: config.bitbucket },
  });
}
