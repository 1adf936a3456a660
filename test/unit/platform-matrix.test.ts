/**
 * Every platform's faithful dump (test/fixtures/platforms/, examples/): `plan` either writes a plan that the plan
 * validator accepts and whose text names no empty value, or exits 2 with one error line giving the platform's (or the
 * pod-address owner's) reason and path, and prints no plan.
 */
import { install } from '../../src/install.ts';
import { strict as assert } from 'node:assert';
import { describe, test } from 'node:test';
import { planFromYaml } from '../../src/plan/index.ts';
import { run } from './run-cli.ts';

install();

type Outcome = 'planned' | RegExp;
const REFUSED_SERVICE = /^error: moving the Service CIDR is refused on /;
const REFUSED_POD = /^error: moving the (Pod CIDR is refused on |Pod CIDR is refused: )/;

/**
 * k3s and RKE2 run with the range holding the old and the new pod range while nodes of both exist: NEW must sit
 * near the old 10.42.0.0/16 there (172.18.0.0/16 is refused: the range holding both would be 0.0.0.0/0).
 */
const NEAR_K3S_PODS = '10.44.0.0/16';

/**
 * kOps refuses a single-range plan when no nonMasqueradeCIDR of /8 or smaller holds the new range and the unmoved one
 * (services 100.64.0.0/13 there): NEW pods sit next to it, outside 100.64.0.0/10 (nonMasqueradeCIDR 100.0.0.0/9).
 */
const NEAR_KOPS_SERVICES = '100.0.0.0/14';

const MATRIX: Array<{ dir: string; service: Outcome; pod: Outcome; why?: RegExp; podTarget?: string }> = [
  { dir: 'examples/kops-tailscale', service: 'planned', pod: 'planned', podTarget: NEAR_KOPS_SERVICES },
  { dir: 'examples/kops-legacy-pool', service: 'planned', pod: 'planned', podTarget: NEAR_KOPS_SERVICES },
  { dir: 'examples/kubeadm-exhausted', service: 'planned', pod: 'planned' },
  { dir: 'test/fixtures/platforms/cilium-cluster-pool', service: 'planned', pod: REFUSED_POD, why: /Cilium cluster-pool IPAM .*clusterPoolIPv4PodCIDRList.*instead: .*multi-pool/ },
  { dir: 'test/fixtures/platforms/eks', service: REFUSED_SERVICE, pod: REFUSED_POD, why: /Amazon EKS/ },
  { dir: 'test/fixtures/platforms/eks-1.33', service: REFUSED_SERVICE, pod: REFUSED_POD, why: /Amazon EKS/ },
  { dir: 'test/fixtures/platforms/eks-custom-networking', service: REFUSED_SERVICE, pod: REFUSED_POD, why: /Amazon EKS/ },
  { dir: 'test/fixtures/platforms/gke', service: REFUSED_SERVICE, pod: REFUSED_POD, why: /GKE/ },
  { dir: 'test/fixtures/platforms/aks-overlay', service: REFUSED_SERVICE, pod: REFUSED_POD, why: /AKS/ },
  { dir: 'test/fixtures/platforms/openshift', service: REFUSED_SERVICE, pod: REFUSED_POD, why: /OpenShift/ },
  { dir: 'test/fixtures/platforms/openshift-sdn', service: REFUSED_SERVICE, pod: REFUSED_POD, why: /OpenShift/ },
  { dir: 'test/fixtures/platforms/k3s', service: 'planned', pod: 'planned', podTarget: NEAR_K3S_PODS },
  { dir: 'examples/k3s', service: 'planned', pod: 'planned', podTarget: NEAR_K3S_PODS },
  { dir: 'test/fixtures/platforms/rke2-canal', service: 'planned', pod: 'planned', podTarget: NEAR_K3S_PODS },
];

/** A flag written with nothing after it (`--service-cluster-ip-range=` at the end of a word). */
const EMPTY = /--[a-z0-9-]+=(?=\s|$|,|"|'|`)/m;

describe('plan on every platform dump', () => {
  for (const m of MATRIX) {
    for (const [move, args, outcome] of [
      ['service', ['--service-cidr', '100.32.0.0/16'], m.service],
      ['pod', ['--pod-cidr', m.podTarget ?? '172.18.0.0/16'], m.pod],
    ] as const) {
      test(`${m.dir}: ${move} move ${outcome === 'planned' ? 'is planned' : 'is refused'}`, async () => {
        const r = await run(['plan', ...args, '-f', m.dir, '-o', 'yaml']);
        if (outcome === 'planned') {
          assert.ok(r.code === 0 || r.code === 1, `exit ${r.code}: ${r.err}`);
          const plan = planFromYaml(r.out);
          assert.ok(plan.steps.length > 0 || plan.preflight.some((c) => c.status === 'fail'), 'steps, or a failed check saying why not');
          const empty = EMPTY.exec(r.out);
          assert.equal(empty, null, `empty value in the plan: ${empty?.[0]} near ${r.out.slice(Math.max(0, (empty?.index ?? 0) - 200), (empty?.index ?? 0) + 50)}`);
        } else {
          assert.equal(r.code, 2, r.err);
          assert.equal(r.out, '');
          const lines = r.err.trim().split('\n');
          assert.equal(lines.length, 1, r.err);
          assert.match(lines[0]!, outcome);
          assert.match(lines[0]!, m.why!);
          assert.match(lines[0]!, /; instead: /);
        }
      });
    }
  }
});
