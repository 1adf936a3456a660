import * as yaml from 'js-yaml';
import { HELM_RELEASES_RBAC_FILE, recreateGrants, recreateNamespaces, RECREATE_ROLE } from '../../plan/access.ts';
import type { Command } from '../command.ts';
import { ExitCode } from '../errors.ts';
import { readPlan } from '../session.ts';

/**
 * `kube-renumber rbac PLAN`: the Role and RoleBinding of `create pods` in each namespace where the run creates bare
 * pods again (plan/recreate-grants.ts), as manifests for kubectl apply -f -. deploy/ grants the rest.
 */
export const rbacCommand: Command = {
  name: 'rbac',
  summary: 'the per-namespace Roles a plan\'s run needs on top of deploy/ (create pods where bare pods are created again)',
  usage: 'kube-renumber rbac PLAN',
  options: {},
  positionals: { min: 1, max: 1, name: 'PLAN' },
  help: `Writes, for the plan's bare pods (no controller; created again from their backup), a Role ${RECREATE_ROLE}
granting create pods and a RoleBinding of it to the ServiceAccount kube-system/kube-renumber-migrate, in each of
their namespaces and nowhere else. deploy/ grants no create pods.

Example: kube-renumber rbac plan.yaml | kubectl apply -f -`,
  async run({ positionals, io }) {
    const { plan, path } = readPlan(positionals);
    const namespaces = recreateNamespaces(plan.spec);
    const head = [
      `# create pods for the run of plan ${path}, in the namespaces of its bare pods only (they are created again from`,
      '# their backup); on top of deploy/rbac.yaml, deploy/rbac-migrate.yaml and deploy/rbac-migrate-pods.yaml.',
      ...(namespaces.length === 0 ? ['# The plan creates no bare pod again: nothing to grant.'] : []),
      // a plan read with --read-helm-releases: its gate lists Secrets in every namespace, which no Role here grants
      ...(plan.steps.some((s) => s.kind === 'gate' && s.gate.helmReleases === true)
        ? [`# Its gate references reads Helm's release Secrets again (plan --read-helm-releases): kubectl apply -f ${HELM_RELEASES_RBAC_FILE}`]
        : []),
    ].join('\n');
    io.out(`${head}\n${recreateGrants(namespaces).map((d) => `---\n${yaml.dump(d, { lineWidth: -1, noRefs: true })}`).join('')}`);
    return ExitCode.ok;
  },
};
