/**
 * The migration list, imported statically so the same code runs from TypeScript sources
 * (tests), from compiled JavaScript (the service) and from the knex CLI, with no file globbing.
 * Add new migrations at the end, named YYYYMMDDHHMMSS_what.
 */
import type { Knex } from 'knex';
import * as foundation from './20261123100000_foundation';
import * as builds from './20261123110000_builds';
import * as analytics from './20261123120000_analytics';
import * as rateLimits from './20261123140000_rate_limits';
import * as agents from './20261123150000_agents';
import * as jobUnblock from './20261123150100_job_unblock';
import * as jobLifecycle from './20261123160000_job_lifecycle';
import * as jobSteps from './20261123170000_job_steps';
import * as jobSweepIndexes from './20261123180000_job_sweep_indexes';
import * as jobPriority from './20261125100000_job_priority';
import * as jobDispatch from './20261125110000_job_dispatch';
import * as jobLogSize from './20261125120000_job_log_size';
import * as buildTriggeredFrom from './20261125130000_build_triggered_from';
import * as artifacts from './20261125140000_artifacts';
import * as annotations from './20261125150000_annotations';
import * as testRunWindows from './20261125160000_test_run_windows';
import * as agentPause from './20261125170000_agent_pause';
import * as teams from './20261125180000_teams';
import * as clusters from './20261125181000_clusters';
import * as pipelineSchedules from './20261125182000_pipeline_schedules';
import * as pipelineTemplatesEmojis from './20261125183000_pipeline_templates_emojis';
import * as outbox from './20261126090000_outbox';
import * as notificationServices from './20261126100000_notification_services';
import * as pipelineWebhookSecret from './20261126101000_pipeline_webhook_secret';
import * as notify from './20261126102000_notify';
import * as pipelineBadgeKey from './20261126110000_pipeline_badge_key';
import * as givenTokenSecrets from './20261126111000_given_token_secrets';
import * as webSessions from './20261126112000_web_sessions';
import * as realAgent from './20261127050000_real_agent';
import * as teamSuiteRegistryFlags from './20261127051000_team_suite_registry_flags';
import * as stepUpdates from './20261127052000_step_updates';
import * as stepUploads from './20261127091000_step_uploads';
import * as testQuarantine from './20261127092000_test_quarantine';
import * as rules from './20261127093000_rules';
import * as pipelineTriggers from './20261127093010_pipeline_triggers';
import * as organizationAdmin from './20261127094000_organization_admin';
import * as pipelineSettings from './20261127094010_pipeline_settings';
import * as githubWebhookProcessing from './20261127095000_github_webhook_processing';
import * as jobSignalRetriedBy from './20261127120000_job_signal_retried_by';
import * as unfinishedBuildsIndex from './20261127152000_unfinished_builds_index';
import * as executionTags from './20261128090000_execution_tags';
import * as pipelineCloneMirrorUrl from './20261128130000_pipeline_clone_mirror_url';
import * as teamDestroyPackagesFlag from './20261128140000_team_destroy_packages_flag';
import * as jobConcurrencyGroups from './20261128190000_job_concurrency_groups';
import * as jobPromisedFailure from './20261128200000_job_promised_failure';
import * as outboxNamedEvents from './20261128210000_outbox_named_events';
import * as buildWebhookEvent from './20261129040000_build_webhook_event';
import * as agentPriorityIndex from './20261129050000_agent_priority_index';
import * as jobAutomaticRetries from './20261129070000_job_automatic_retries';
import * as jobGroup from './20261129090000_job_group';
import * as jobDispatchAt from './20261129100000_job_dispatch_at';
import * as openPullRequests from './20261129120000_open_pull_requests';
import * as pipelineEmojiColor from './20261129130000_pipeline_emoji_color';
import * as suiteOidcPolicy from './20261129140000_suite_oidc_policy';
import * as suiteApiTokenSealed from './20261129150000_suite_api_token_sealed';
import * as jobUnblockedIndex from './20261129160000_job_unblocked_index';

const migrations: Record<string, Knex.Migration> = {
  '20261123100000_foundation': foundation,
  '20261123110000_builds': builds,
  '20261123120000_analytics': analytics,
  '20261123140000_rate_limits': rateLimits,
  '20261123150000_agents': agents,
  '20261123150100_job_unblock': jobUnblock,
  '20261123160000_job_lifecycle': jobLifecycle,
  '20261123170000_job_steps': jobSteps,
  '20261123180000_job_sweep_indexes': jobSweepIndexes,
  '20261125100000_job_priority': jobPriority,
  '20261125110000_job_dispatch': jobDispatch,
  '20261125120000_job_log_size': jobLogSize,
  '20261125130000_build_triggered_from': buildTriggeredFrom,
  '20261125140000_artifacts': artifacts,
  '20261125150000_annotations': annotations,
  '20261125160000_test_run_windows': testRunWindows,
  '20261125170000_agent_pause': agentPause,
  '20261125180000_teams': teams,
  '20261125181000_clusters': clusters,
  '20261125182000_pipeline_schedules': pipelineSchedules,
  '20261125183000_pipeline_templates_emojis': pipelineTemplatesEmojis,
  '20261126090000_outbox': outbox,
  '20261126100000_notification_services': notificationServices,
  '20261126101000_pipeline_webhook_secret': pipelineWebhookSecret,
  '20261126102000_notify': notify,
  '20261126110000_pipeline_badge_key': pipelineBadgeKey,
  '20261126111000_given_token_secrets': givenTokenSecrets,
  '20261126112000_web_sessions': webSessions,
  '20261127050000_real_agent': realAgent,
  '20261127051000_team_suite_registry_flags': teamSuiteRegistryFlags,
  '20261127052000_step_updates': stepUpdates,
  '20261127091000_step_uploads': stepUploads,
  '20261127092000_test_quarantine': testQuarantine,
  '20261127093000_rules': rules,
  '20261127093010_pipeline_triggers': pipelineTriggers,
  '20261127094000_organization_admin': organizationAdmin,
  '20261127094010_pipeline_settings': pipelineSettings,
  '20261127095000_github_webhook_processing': githubWebhookProcessing,
  '20261127120000_job_signal_retried_by': jobSignalRetriedBy,
  '20261127152000_unfinished_builds_index': unfinishedBuildsIndex,
  '20261128090000_execution_tags': executionTags,
  '20261128130000_pipeline_clone_mirror_url': pipelineCloneMirrorUrl,
  '20261128140000_team_destroy_packages_flag': teamDestroyPackagesFlag,
  '20261128190000_job_concurrency_groups': jobConcurrencyGroups,
  '20261128200000_job_promised_failure': jobPromisedFailure,
  '20261128210000_outbox_named_events': outboxNamedEvents,
  '20261129040000_build_webhook_event': buildWebhookEvent,
  '20261129050000_agent_priority_index': agentPriorityIndex,
  '20261129070000_job_automatic_retries': jobAutomaticRetries,
  '20261129090000_job_group': jobGroup,
  '20261129100000_job_dispatch_at': jobDispatchAt,
  '20261129120000_open_pull_requests': openPullRequests,
  '20261129130000_pipeline_emoji_color': pipelineEmojiColor,
  '20261129140000_suite_oidc_policy': suiteOidcPolicy,
  '20261129150000_suite_api_token_sealed': suiteApiTokenSealed,
  '20261129160000_job_unblocked_index': jobUnblockedIndex,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};
