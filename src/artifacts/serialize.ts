/** Artifacts -> the exact JSON of the contract: the REST representation and the agent search's. */
import type { components } from '../../generated/api';
import { isoTime } from '../http/responses/format';
import { dirname, filename } from './paths';
import type { Artifact } from './repository';

type ArtifactJson = components['schemas']['Artifact'];
type FoundArtifactJson = components['schemas']['FoundArtifact'];

/** `buildUrl`: the build's API URL (`.../pipelines/{slug}/builds/{number}`), which the artifact's URLs extend. */
export function serializeArtifact(a: Artifact, buildUrl: string): ArtifactJson {
  const url = `${buildUrl}/jobs/${a.jobId}/artifacts/${a.id}`;
  return {
    id: a.id,
    job_id: a.jobId,
    url,
    download_url: `${url}/download`,
    state: a.state,
    path: a.path,
    dirname: dirname(a.path),
    filename: filename(a.path),
    mime_type: a.contentType,
    file_size: a.fileSize,
    glob_path: null,
    original_path: null,
    sha1sum: a.sha1sum,
  };
}

/** As `buildkite-agent` reads a search result: `url` is the content's signed URL (no token needed). */
export function serializeFoundArtifact(a: Artifact, url: string): FoundArtifactJson {
  return {
    id: a.id,
    job_id: a.jobId,
    path: a.path,
    absolute_path: a.path,
    glob_path: '',
    file_size: a.fileSize,
    sha1sum: a.sha1sum,
    sha256sum: a.sha256sum ?? '',
    url,
    upload_destination: '',
    created_at: isoTime(a.createdAt),
  };
}
