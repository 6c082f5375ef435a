/**
 * The API's JSON as tests read it, from the generated types of the spec (generated/api.ts), so a
 * test never keeps a hand-written copy that drifts from the contract.
 */
import type { components } from '../../generated/api';

type Schemas = components['schemas'];

export type JobJson = Schemas['Job'];
export type PipelineJson = Schemas['Pipeline'];
export type AgentJson = Schemas['Agent'];
export type AgentJobJson = Schemas['AgentJob'];
/** A build as created or read without `exclude_jobs`: its jobs are there. */
export type BuildJson = Schemas['Build'] & { jobs: JobJson[] };
