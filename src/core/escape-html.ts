/**
 * Text made safe inside HTML (element content and quoted attribute values): shared by the web
 * pages' templates (web/html.ts) and the job log's HTML rendering, which the REST API serves too.
 */
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}
