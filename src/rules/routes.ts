/** Rules (REST): thin handlers for list, create, get and delete. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { uncountedPage } from '../http/responses/pagination';
import { serializeRule } from './serialize';
import type { RuleService } from './service';

export function ruleRoutes(rules: RuleService, publicUrl: string) {
  const api = operationRouter();

  api.on('listRules', async (req, res) => {
    const actor = actorOf(res);
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => rules.list(actor, offset, limit));
    res.json(items.map((r) => serializeRule(r, publicUrl, actor.organization.slug)));
  });
  api.on('createRule', async (req, res) => {
    const actor = actorOf(res);
    res.status(201).json(serializeRule(await rules.create(actor, req.body), publicUrl, actor.organization.slug));
  });
  api.on('getRule', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeRule(await rules.get(actor, req.params.rule_uuid), publicUrl, actor.organization.slug));
  });
  api.on('deleteRule', async (req, res) => {
    await rules.delete(actorOf(res), req.params.rule_uuid);
    res.status(204).end();
  });

  return api.router;
}
