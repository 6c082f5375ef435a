/** Teams (with their members, pipelines and suites) and the organization's members (REST): thin handlers. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { countedPage } from '../http/responses/pagination';
import { serializeOrganizationMember, serializeTeam, serializeTeamMember, serializeTeamPipeline, serializeTeamSuite } from './serialize';
import type { TeamInput, TeamService } from './service';

export function teamRoutes(teams: TeamService, publicUrl: string) {
  const api = operationRouter();

  api.on('listTeams', async (req, res) => {
    const items = await countedPage(req, res, publicUrl, (offset, limit) => teams.list(actorOf(res), { userId: req.query?.user_id }, offset, limit));
    res.json(items.map(serializeTeam));
  });
  api.on('createTeam', async (req, res) => {
    const input = teamInput(req.body);
    res.status(201).json(serializeTeam(await teams.create(actorOf(res), input)));
  });
  api.on('getTeam', async (req, res) => {
    res.json(serializeTeam(await teams.get(actorOf(res), req.params.team_id)));
  });
  api.on('updateTeam', async (req, res) => {
    const input = teamInput(req.body);
    res.json(serializeTeam(await teams.update(actorOf(res), req.params.team_id, input)));
  });
  api.on('deleteTeam', async (req, res) => {
    await teams.delete(actorOf(res), req.params.team_id);
    res.status(204).end();
  });

  api.on('listTeamMembers', async (req, res) => {
    const items = await countedPage(req, res, publicUrl, (offset, limit) => teams.members(actorOf(res), req.params.team_id, offset, limit));
    res.json(items.map(serializeTeamMember));
  });
  api.on('createTeamMember', async (req, res) => {
    const { user_id, role } = req.body;
    res.status(201).json(serializeTeamMember(await teams.addMember(actorOf(res), req.params.team_id, { user_id, role })));
  });
  api.on('getTeamMember', async (req, res) => {
    res.json(serializeTeamMember(await teams.member(actorOf(res), req.params.team_id, req.params.user_id)));
  });
  api.on('updateTeamMember', async (req, res) => {
    res.json(serializeTeamMember(await teams.setMemberRole(actorOf(res), req.params.team_id, req.params.user_id, req.body.role)));
  });
  api.on('deleteTeamMember', async (req, res) => {
    await teams.removeMember(actorOf(res), req.params.team_id, req.params.user_id);
    res.status(204).end();
  });

  api.on('listTeamPipelines', async (req, res) => {
    const actor = actorOf(res);
    const items = await countedPage(req, res, publicUrl, (offset, limit) => teams.pipelineGrants(actor, req.params.team_id, offset, limit));
    res.json(items.map((g) => serializeTeamPipeline(g, actor.organization.slug, publicUrl)));
  });
  api.on('createTeamPipeline', async (req, res) => {
    const actor = actorOf(res);
    const { pipeline_id, access_level } = req.body;
    const grant = await teams.addPipeline(actor, req.params.team_id, { pipeline_id, access_level });
    res.status(201).json(serializeTeamPipeline(grant, actor.organization.slug, publicUrl));
  });
  api.on('getTeamPipeline', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeTeamPipeline(await teams.pipelineGrant(actor, req.params.team_id, req.params.pipeline_id), actor.organization.slug, publicUrl));
  });
  api.on('updateTeamPipeline', async (req, res) => {
    const actor = actorOf(res);
    const grant = await teams.setPipelineAccess(actor, req.params.team_id, req.params.pipeline_id, req.body.access_level);
    res.json(serializeTeamPipeline(grant, actor.organization.slug, publicUrl));
  });
  api.on('deleteTeamPipeline', async (req, res) => {
    await teams.removePipeline(actorOf(res), req.params.team_id, req.params.pipeline_id);
    res.status(204).end();
  });

  api.on('listTeamSuites', async (req, res) => {
    const actor = actorOf(res);
    const items = await countedPage(req, res, publicUrl, (offset, limit) => teams.suiteGrants(actor, req.params.team_id, offset, limit));
    res.json(items.map((g) => serializeTeamSuite(g, actor.organization.slug, publicUrl)));
  });
  api.on('createTeamSuite', async (req, res) => {
    const actor = actorOf(res);
    const { suite_id, access_level } = req.body;
    const grant = await teams.addSuite(actor, req.params.team_id, { suite_id, access_level });
    res.status(201).json(serializeTeamSuite(grant, actor.organization.slug, publicUrl));
  });
  api.on('getTeamSuite', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeTeamSuite(await teams.suiteGrant(actor, req.params.team_id, req.params.suite_id), actor.organization.slug, publicUrl));
  });
  api.on('updateTeamSuite', async (req, res) => {
    const actor = actorOf(res);
    const grant = await teams.setSuiteAccess(actor, req.params.team_id, req.params.suite_id, req.body.access_level);
    res.json(serializeTeamSuite(grant, actor.organization.slug, publicUrl));
  });
  api.on('deleteTeamSuite', async (req, res) => {
    await teams.removeSuite(actorOf(res), req.params.team_id, req.params.suite_id);
    res.status(204).end();
  });

  api.on('listOrganizationMembers', async (req, res) => {
    const actor = actorOf(res);
    const items = await countedPage(req, res, publicUrl, (offset, limit) => teams.organizationMembers(actor, offset, limit));
    res.json(items.map((m) => serializeOrganizationMember(m, teams.showsSsoMode(actor, m))));
  });
  api.on('getOrganizationMember', async (req, res) => {
    const actor = actorOf(res);
    const m = await teams.organizationMember(actor, req.params.user_id);
    res.json(serializeOrganizationMember(m, teams.showsSsoMode(actor, m)));
  });
  api.on('updateOrganizationMember', async (req, res) => {
    const actor = actorOf(res);
    const { role, sso_mode } = req.body;
    const m = await teams.updateOrganizationMember(actor, req.params.user_id, { role, sso_mode });
    res.json(serializeOrganizationMember(m, teams.showsSsoMode(actor, m)));
  });
  api.on('removeOrganizationMember', async (req, res) => {
    await teams.removeOrganizationMember(actorOf(res), req.params.user_id);
    res.status(204).end();
  });

  return api.router;
}

/**
 * The fields of a team a request may set, taken one by one: read-only and unknown properties
 * of the body are dropped here, never passed on (the same list for create and update).
 */
function teamInput(body: TeamInput): TeamInput {
  const {
    name,
    description,
    privacy,
    is_default_team,
    default_member_role,
    members_can_create_pipelines,
    members_can_create_suites,
    members_can_destroy_suites,
    members_can_create_registries,
    members_can_destroy_registries,
    members_can_destroy_packages,
  } = body;
  return {
    name,
    description,
    privacy,
    is_default_team,
    default_member_role,
    members_can_create_pipelines,
    members_can_create_suites,
    members_can_destroy_suites,
    members_can_create_registries,
    members_can_destroy_registries,
    members_can_destroy_packages,
  };
}
