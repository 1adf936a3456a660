/**
 * The references gate's check (src/plan/references-gate.ts): the cluster is read and scanned again with the plan's
 * moves and mapping (Helm's release Secrets too when the plan was read with them, gate.helmReleases); the gate holds when no error-severity reference is left, when --ack-gate accepts the list, or
 * when an earlier run of this plan already passed it (its journal says so: after the first change the old
 * addresses move, and what the scan sees of them with them).
 */
import { scanReferences } from '../analyze/references.ts';
import { buildSnapshot } from '../cluster/build.ts';
import { readLiveInventory } from '../kube/discover.ts';
import type { GateStep, MigrationPlan } from '../plan/plan.ts';
import { gateErrors, mappedClusterIPs, planMoves, referenceLine } from '../plan/references-gate.ts';
import type { Step } from './runner.ts';

export function referencesGateStep(plan: MigrationPlan, p: GateStep, acknowledged: readonly string[]): Step {
  return {
    id: p.id, title: p.description, kind: 'gate', instructions: p.gate.instructions,
    check: async (ctx) => {
      if (acknowledged.includes(p.id)) {
        ctx.log(`gate ${p.id}: acknowledged by --ack-gate`);
        return true;
      }
      if (ctx.journal.entries().some((e) => e.event === 'step-skip' && e.step === p.id)) return true;
      const snap = buildSnapshot(await readLiveInventory(ctx.client, { helmReleases: p.gate.helmReleases === true }));
      const errors = gateErrors(scanReferences(snap, planMoves(plan.spec), { clusterIPs: mappedClusterIPs(plan.mapping) }), plan.spec);
      for (const r of errors) ctx.log(`${referenceLine(r)} still names the old ${r.role === 'service' ? 'Service' : 'pod'} range`);
      return errors.length === 0;
    },
  };
}
