import { install } from '../../src/install.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as yaml from 'js-yaml';
import { planFromYaml, planToYaml, PlanFormatError, validatePlan } from '../../src/plan/render.ts';
import { run } from './run-cli.ts';
import { ROOT } from './bad-input/harness.ts';
import { join } from 'node:path';

install();

async function planOf(args: string[], example: string): Promise<any> {
  const r = await run(['plan', ...args, '-f', join(ROOT, 'examples', example), '-o', 'yaml']);
  assert.equal(r.code, 0, r.err);
  return yaml.load(r.out);
}

const SERVICE = await planOf(['--service-cidr', '100.32.0.0/16'], 'kops-tailscale');
const CALICO = await planOf(['--pod-cidr', '100.0.0.0/14'], 'kops-tailscale');
const NODE = await planOf(['--pod-cidr', '100.0.0.0/14', '--ipam', 'node'], 'kops-tailscale');
const BOTH = await planOf(['--pod-cidr', '100.0.0.0/14', '--service-cidr', '100.32.0.0/16'], 'kops-tailscale');

function refused(base: any, mut: (d: any) => void, re: RegExp): void {
  const d = structuredClone(base);
  mut(d);
  assert.throws(() => validatePlan(d), (e: unknown) => {
    assert.ok(e instanceof PlanFormatError, `not a PlanFormatError: ${String(e)}`);
    assert.match((e as Error).message, re);
    return true;
  });
}
const msg = (re: RegExp) => (e: unknown) => e instanceof PlanFormatError && re.test(e.message);
const moved = (d: any) => d.mapping.find((m: any) => m.action === 'move');
const stepOf = (d: any, kind: string) => d.steps.find((s: any) => s.kind === kind);

describe('validatePlan', () => {
  it('gate conditions and supersededBy: checked, and filled in for a plan written before the fields', () => {
    refused(SERVICE, (d) => { d.steps.find((s: any) => s.kind === 'gate').gate.condition = 'whenever'; }, /steps\[\d+\]\.gate\.condition: must be one of servicecidr-api, /);
    refused(SERVICE, (d) => { const g = d.steps.find((s: any) => s.kind === 'gate'); g.id = 'my-gate'; delete g.gate.condition; }, /steps\[\d+\]\.gate\.condition: must be one of .* \(missing\)/);
    refused(CALICO, (d) => { delete d.steps.find((s: any) => s.kind === 'gate').gate; }, /steps\[\d+\]\.gate: missing \(a gate step needs one\)/);
    refused(CALICO, (d) => { d.steps.find((s: any) => s.kind === 'gate').gate.condition = 'workloads-restarted'; }, /steps\[\d+\]\.kind: gate .* belongs to a Service CIDR migration/);
    refused(SERVICE, (d) => { stepOf(d, 'move-services').supersededBy = ['nope']; }, /supersededBy\[0\]: names "nope", which is not a step of this plan/);
    refused(SERVICE, (d) => { const m = stepOf(d, 'move-services'); m.supersededBy = [d.steps[0].id]; }, /which does not come after/);
    // written before the fields: the same conditions and supersessions as the planner's
    const legacy = structuredClone(BOTH);
    for (const s of legacy.steps) { delete s.supersededBy; if (s.gate) delete s.gate.condition; }
    assert.deepEqual(validatePlan(legacy), BOTH);
  });

  it('accepts what the planner writes: Service, Calico, node IPAM and combined plans', () => {
    for (const p of [SERVICE, CALICO, NODE, BOTH]) assert.deepEqual(validatePlan(structuredClone(p)), p);
  });

  it('node podCIDR sizes: a plan written before maskSizes is read with its one maskSize; two families need maskSizes', () => {
    assert.deepEqual(NODE.spec.podCIDR.node.maskSizes, { ipv4: 24 });
    const legacy = structuredClone(NODE);
    delete legacy.spec.podCIDR.node.maskSizes;
    legacy.spec.podCIDR.node.maskSize = 24;
    assert.deepEqual(validatePlan(legacy), NODE);
    refused(NODE, (d) => { d.spec.podCIDR.node.maskSize = 24; }, /node\.maskSize: set together with maskSizes/);
    refused(NODE, (d) => { delete d.spec.podCIDR.node.maskSizes; d.spec.podCIDR.node.maskSize = 12; }, /node\.maskSize: \/12 is larger than spec\.podCIDR\.to/);
    const dual = (d: any) => {
      d.spec.podCIDR.to = ['100.0.0.0/14', 'fd00:10:245::/56'];
      d.spec.podCIDR.node.maskSizes = { ipv4: 24, ipv6: 64 };
      d.spec.podCIDR.node.nodes.forEach((n: any, i: number) => { n.to = [n.to[0], `fd00:10:245:${i.toString(16)}::/64`]; });
      for (const s of d.steps) for (const it of s.items ?? []) { const n = d.spec.podCIDR.node.nodes.find((x: any) => x.name === it.name); if (n) it.to = n.to; }
    };
    const ok = structuredClone(NODE);
    dual(ok);
    assert.deepEqual(validatePlan(structuredClone(ok)), ok);
    refused(NODE, (d) => { dual(d); delete d.spec.podCIDR.node.maskSizes; d.spec.podCIDR.node.maskSize = 24; }, /node\.maskSize: one size for 2 families of spec\.podCIDR\.to .*give maskSizes \{ipv4, ipv6\}/);
    refused(NODE, (d) => { dual(d); d.spec.podCIDR.node.maskSizes.ipv6 = 48; }, /maskSizes\.ipv6: \/48 is larger than spec\.podCIDR\.to's fd00:10:245::\/56/);
    refused(NODE, (d) => { dual(d); d.spec.podCIDR.node.nodes[0].to = [d.spec.podCIDR.node.nodes[0].to[0]]; }, /nodes\[0\]\.to: has no IPv6 podCIDR \(spec\.podCIDR\.to has fd00:10:245::\/56\)/);
    refused(NODE, (d) => { dual(d); d.spec.podCIDR.node.nodes[0].to[1] = 'fd00:10:246::/64'; }, /nodes\[0\]\.to\[1\]: fd00:10:246::\/64 is not inside spec\.podCIDR\.to/);
    // what assign-podcidr patches onto the node: one per family, inside NEW
    refused(NODE, (d) => { dual(d); const it = stepOf(d, 'assign-podcidr').items[0]; it.to = [it.to[0]]; }, /steps\[\d+\]\.items\[0\]\.to: has no IPv6 podCIDR \(spec\.podCIDR\.to has fd00:10:245::\/56\)/);
    refused(NODE, (d) => { stepOf(d, 'assign-podcidr').items[0].to = ['10.200.0.0/24']; }, /steps\[\d+\]\.items\[0\]\.to\[0\]: 10\.200\.0\.0\/24 is not inside spec\.podCIDR\.to/);
    // a step or gate of node moves names each node once (STEP_KINDS / GATE_CONDITION_INFO nodesOnce)
    refused(NODE, (d) => { const st = stepOf(d, 'drain-node'); st.items.push(st.items[0]); }, /steps\[\d+\]\.items\[1\]\.name: node ".*" is named twice in this step/);
    refused(NODE, (d) => { const g = d.steps.find((s: any) => s.gate?.condition === 'node-reregistered'); g.items.push(g.items[0]); }, /steps\[\d+\]\.items\[1\]\.name: node ".*" is named twice in this step/);
  });

  it('checks every CIDR and address, and that they lie in their ranges and families', () => {
    refused(SERVICE, (d) => { d.spec.serviceCIDR.target[0] = 'banana'; }, /^invalid plan: spec\.serviceCIDR\.target\[0\]: "banana" is not a CIDR/);
    refused(SERVICE, (d) => { d.spec.serviceCIDR.from[0] = '100.64.0.1/13'; }, /spec\.serviceCIDR\.from\[0\]: "100\.64\.0\.1\/13" is not a CIDR \(host bits are set/);
    refused(SERVICE, (d) => { d.spec.serviceCIDR.to[0] = '100.32.0.0/33'; }, /spec\.serviceCIDR\.to\[0\]: "100\.32\.0\.0\/33" is not a CIDR/);
    refused(SERVICE, (d) => { d.spec.serviceCIDR.target = ['fd00::/108']; d.spec.serviceCIDR.to = ['fd00::/108']; }, /target\[0\]: fd00::\/108 is IPv6, but from has no IPv6 range/);
    refused(SERVICE, (d) => { d.spec.serviceCIDR.kept = ['10.0.0.0/28']; }, /kept\[0\]: 10\.0\.0\.0\/28 is not inside from/);
    refused(SERVICE, (d) => { moved(d).to[0] = '999.0.0.1'; }, /mapping\[\d+\]\.to\[0\]: "999\.0\.0\.1" is not an IP address/);
    refused(SERVICE, (d) => { moved(d).to[0] = '10.1.2.3'; }, /mapping\[\d+\]\.to\[0\]: "10\.1\.2\.3" is not inside spec\.serviceCIDR\.target/);
    refused(SERVICE, (d) => { moved(d).to[0] = 'fd00::5'; }, /is IPv6, from\[0\] is IPv4/);
    refused(SERVICE, (d) => { moved(d).to = []; }, /must have as many addresses as from/);
    refused(SERVICE, (d) => { stepOf(d, 'move-services').items[0].to[0] = 'x.y'; }, /steps\[\d+\]\.items\[0\]\.to\[0\]: "x\.y" is not an IP address/);
    refused(SERVICE, (d) => { stepOf(d, 'create-servicecidrs').serviceCIDRs[0].cidrs = ['100.32.0.0/16', '100.33.0.0/16']; }, /cidrs\[1\]: .*at most one IPv4 CIDR/);
    refused(CALICO, (d) => { d.spec.podCIDR.calico.newPools[0].cidr = '192.168.0.0/16'; }, /newPools\[0\]\.cidr: 192\.168\.0\.0\/16 is not inside spec\.podCIDR\.to/);
    refused(CALICO, (d) => { d.spec.podCIDR.calico.newPools[0].blockSize = 8; }, /newPools\[0\]\.blockSize: must be a whole number from 14 to 32/);
    refused(CALICO, (d) => { d.spec.podCIDR.from = ['fd00::/56']; }, /spec\.podCIDR\.from\[0\]: fd00::\/56 is IPv6, but to has no IPv6 range/);
    refused(NODE, (d) => { d.spec.podCIDR.node.maskSizes.ipv4 = 40; }, /maskSizes\.ipv4: must be a whole number from 1 to 32/);
    refused(NODE, (d) => { d.spec.podCIDR.node.maskSizes.ipv4 = 12; }, /maskSizes\.ipv4: \/12 is larger than spec\.podCIDR\.to's 100\.0\.0\.0\/14/);
    refused(NODE, (d) => { d.spec.podCIDR.node.maskSizes = { ipv4: 24, ipv6: 64 }; }, /maskSizes\.ipv6: unknown field \(expected ipv4\)/);
    refused(NODE, (d) => { d.spec.podCIDR.node.maskSizes = {}; }, /maskSizes\.ipv4: missing \(spec\.podCIDR\.to has the IPv4 range 100\.0\.0\.0\/14\)/);
    refused(NODE, (d) => { d.spec.podCIDR.node.nodes[1].to = ['100.0.0.0/24']; }, /nodes\[1\]\.to\[0\]: 100\.0\.0\.0\/24 is node .*'s too/);
    refused(NODE, (d) => { d.spec.podCIDR.node.nodes[1].to = ['100.0.0.0/25']; }, /nodes\[1\]\.to\[0\]: 100\.0\.0\.0\/25 is not a \/24 \(maskSizes\.ipv4\)/);
    refused(NODE, (d) => { d.spec.podCIDR.node.nodes[1].to = ['10.200.0.0/24']; }, /nodes\[1\]\.to\[0\]: 10\.200\.0\.0\/24 is not inside spec\.podCIDR\.to/);
  });

  it('checks names, types, required fields, kinds and versions', () => {
    refused(SERVICE, (d) => { d.mapping[0].namespace = ['a']; }, /mapping\[0\]\.namespace: must be a string \(got a list\)/);
    refused(SERVICE, (d) => { d.mapping[0].name = 'Web_1'; }, /mapping\[0\]\.name: "Web_1" is not a valid name/);
    refused(SERVICE, (d) => { d.mapping[0].isKubernetes = 1; }, /mapping\[0\]\.isKubernetes: must be true or false/);
    refused(SERVICE, (d) => { d.mapping.push(d.mapping[1]); }, /is mapped twice/);
    refused(SERVICE, (d) => { d.apiVersion = 'kube-renumber.io/v2'; }, /^invalid plan: apiVersion: is "kube-renumber\.io\/v2"/);
    refused(SERVICE, (d) => { d.kind = 'List'; }, /^invalid plan: kind: is "List"/);
    refused(SERVICE, (d) => { d.extra = 1; }, /^invalid plan: extra: unknown field/);
    refused(SERVICE, (d) => { d.spec.podCidr = {}; }, /spec\.podCidr: unknown field/);
    refused(SERVICE, (d) => { d.spec.serviceCIDR.apiVersion = 'v1'; }, /apiVersion: "v1" is not a ServiceCIDR API version/);
    refused(SERVICE, (d) => { d.spec.options.batchSize = 2.5; }, /batchSize: must be a whole number/);
    refused(SERVICE, (d) => { d.steps[0].id = 'a b'; }, /steps\[0\]\.id: "a b" is not a step id/);
    refused(SERVICE, (d) => { d.steps[4].id = d.steps[0].id; }, /steps\[4\]\.id: ".*" is used twice/);
    refused(SERVICE, (d) => { d.steps[0].kind = 'rm-rf'; }, /steps\[0\]\.kind: must be one of/);
    refused(SERVICE, (d) => { stepOf(d, 'move-kubernetes').items = []; }, /a move-kubernetes step names what it works on/);
    refused(SERVICE, (d) => { stepOf(d, 'move-services').items[0].namespace = ''; }, /items\[0\]\.namespace: must not be empty/);
    refused(SERVICE, (d) => { d.steps.push({ id: 'drain-node-x', kind: 'drain-node', description: '', rollback: '', items: [{ namespace: '', name: 'x', from: [], to: [] }] }); },
      /drain-node belongs to a Pod CIDR migration, but the plan has no spec\.podCIDR/);
    // a Pod plan has confirm steps of its own (confirm-pod-disruption); one without its gate text is refused
    refused(CALICO, (d) => { d.steps.push({ id: 'confirm-x', kind: 'confirm', description: '', rollback: '' }); },
      /steps\[\d+\]\.gate: missing \(a confirm step needs one\)/);
    refused(CALICO, (d) => { d.spec.strategy = 'in-place'; }, /spec\.strategy: set, but the plan has no spec\.serviceCIDR/);
    refused(CALICO, (d) => { d.spec.podCIDR.restarts.critical = ['a/b/c']; }, /critical\[0\]: "a\/b\/c" is not namespace\/name/);
    refused(NODE, (d) => { delete stepOf(d, 'drain-node').items; }, /a drain-node step names what it works on/);
    refused(NODE, (d) => { stepOf(d, 'drain-node').items[0].name = 'Node 1'; }, /items\[0\]\.name: "Node 1" is not a valid name/);
    refused(BOTH, (d) => { d.preflight[0].target = 'yes'; }, /preflight\[0\]\.target: must be true or false/);
  });

  it('planFromYaml names the file before the field, and refuses binary, empty and multi-document text', () => {
    const text = planToYaml(SERVICE);
    assert.deepEqual(planFromYaml(text, 'p.yaml'), SERVICE);
    const bad = yaml.dump({ ...SERVICE, spec: { ...SERVICE.spec, serviceCIDR: { ...SERVICE.spec.serviceCIDR, target: ['banana'] } } });
    assert.throws(() => planFromYaml(bad, 'p.yaml'), msg(/^p\.yaml: spec\.serviceCIDR\.target\[0\]: "banana" is not a CIDR/));
    assert.throws(() => planFromYaml(bad), msg(/^invalid plan: spec\.serviceCIDR\.target\[0\]/));
    assert.throws(() => planFromYaml('a\0b', 'p.yaml'), msg(/^p\.yaml: not text \(binary data\)/));
    assert.throws(() => planFromYaml('', 'p.yaml'), msg(/^p\.yaml: the file is empty/));
    assert.throws(() => planFromYaml(`${text}---\n${text}`, 'p.yaml'), msg(/^p\.yaml: not YAML/));
    for (const t of ['', 'x', '\0']) assert.throws(() => planFromYaml(t, 'p.yaml'), PlanFormatError);
  });
});
