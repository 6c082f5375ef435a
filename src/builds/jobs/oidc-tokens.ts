/**
 * `buildkite-agent oidc request-token`: the claims of an OIDC token about the job the agent runs,
 * as the agent's OIDC reference page documents them (standard claims, the optional ones asked
 * for, AWS session tags, a custom subject), signed by the server's issuer
 * (src/security/oidc.ts). No HTTP, no SQL.
 */
import type { components } from '../../../generated/api';
import type { Agent } from '../../agents/repository';
import type { ClusterRepository } from '../../clusters/repository';
import { clock } from '../../core/clock';
import { NotFoundError, ValidationError } from '../../core/errors';
import { STANDARD_CLAIMS, type OidcIssuer } from '../../security/oidc';
import type { BuildRepository } from '../repository';
import type { AgentWorkService } from './agent-work';

type TokenRequest = components['schemas']['OidcTokenRequest'];
type Claim = string | number | null;

/** The documented default lifetime: five minutes. */
const DEFAULT_LIFETIME_SECONDS = 300;
/** The claims `subject_claim` may name: the immutable identifiers (documented). */
const SUBJECT_CLAIMS = new Set(['organization_id', 'pipeline_id', 'cluster_id', 'queue_id', 'build_id', 'job_id', 'agent_id']);
const AGENT_TAG = 'agent_tag:';

export class OidcTokenService {
  constructor(
    private readonly work: AgentWorkService,
    private readonly builds: BuildRepository,
    private readonly clusters: ClusterRepository,
    private readonly issuer: OidcIssuer,
  ) {}

  async request(agent: Agent, jobId: string, body: TokenRequest): Promise<string> {
    const context = await this.work.activeJob(agent, jobId);
    const build = await this.builds.findById(context.build.id);
    if (!build) throw new NotFoundError('job');
    const { job } = context;
    const cluster = job.clusterId ? await this.clusters.findClusterById(job.clusterId) : null;
    const queue = job.clusterId && job.clusterQueueId ? await this.clusters.findQueue(job.clusterId, job.clusterQueueId) : null;
    const optional = new Map<string, Claim>([
      ['organization_id', context.organizationId],
      ['pipeline_id', build.pipelineId],
      ['build_id', build.id],
      ['cluster_id', cluster?.id ?? null],
      ['cluster_name', cluster?.name ?? null],
      ['queue_id', queue?.id ?? null],
      ['queue_key', queue?.key ?? null],
    ]);
    /** An optional claim's value (null: the job has none), undefined for a name that is no claim. */
    const optionalClaim = (name: string): Claim | undefined => {
      if (name.startsWith(AGENT_TAG)) {
        const tag = name.slice(AGENT_TAG.length);
        const found = agent.metaData.find((t) => t.split('=', 1)[0] === tag);
        return found === undefined ? null : found.slice(tag.length + 1);
      }
      return optional.get(name);
    };

    const ref = context.build.tag ? `refs/tags/${context.build.tag}` : `refs/heads/${context.build.branch}`;
    const iat = Math.floor(clock.nowMs() / 1000);
    const claims: Record<string, unknown> = {
      iss: this.issuer.issuer,
      sub: `organization:${context.orgSlug}:pipeline:${context.pipelineSlug}:ref:${ref}:commit:${context.build.commit}:step:${job.stepKey ?? ''}`,
      aud: body.audience?.trim() || `https://buildkite.com/${context.orgSlug}`,
      iat,
      nbf: iat,
      exp: iat + (body.lifetime || DEFAULT_LIFETIME_SECONDS),
      organization_slug: context.orgSlug,
      pipeline_slug: context.pipelineSlug,
      build_number: context.build.number,
      build_branch: context.build.branch,
      ...(context.build.tag ? { build_tag: context.build.tag } : {}),
      build_commit: context.build.commit,
      step_key: job.stepKey,
      job_id: job.id,
      agent_id: agent.id,
      build_source: build.source,
      runner_environment: 'self-hosted',
    };
    for (const name of body.claims ?? []) {
      const value = optionalClaim(name);
      if (value === undefined) throw ValidationError.field('claims', `"${name}" is not a claim: use ${[...optional.keys()].join(', ')} or ${AGENT_TAG}<name>`);
      claims[name] = value;
    }
    if (body.subject_claim !== undefined && body.subject_claim !== '') {
      const name = body.subject_claim;
      if (!SUBJECT_CLAIMS.has(name)) throw ValidationError.field('subject_claim', `must be one of ${[...SUBJECT_CLAIMS].join(', ')}`);
      const value = name === 'job_id' ? job.id : name === 'agent_id' ? agent.id : optionalClaim(name);
      if (value === null || value === undefined) throw ValidationError.field('subject_claim', `the job has no ${name}`);
      claims[name] = value;
      claims.sub = value;
    }
    const tags = body.aws_session_tags ?? [];
    if (tags.length) {
      const principal: Record<string, string[]> = {};
      for (const name of tags) {
        const value = Object.hasOwn(claims, name) ? claims[name] : (STANDARD_CLAIMS as readonly string[]).includes(name) ? null : optionalClaim(name);
        if (value === undefined) throw ValidationError.field('aws_session_tags', `"${name}" is not a claim of the token`);
        // AWS session tags are strings: numbers as text, nulls as "" (documented).
        principal[name] = [value === null ? '' : String(value)];
      }
      claims['https://aws.amazon.com/tags'] = { principal_tags: principal };
    }
    return this.issuer.sign(claims);
  }
}
