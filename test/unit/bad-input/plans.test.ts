/**
 * Bad plans and bad flags for apply, resume, status, verify, rollback and restore: each is refused before the
 * cluster is contacted, a lock taken or anything written (every case points at an unreachable cluster and a
 * state directory inside the case directory, which must stay untouched).
 */
import { corpus, type BadInputCase } from './harness.ts';
import { CALICO_PLAN, KUBECONFIG, LIVE, mutate, NODE_PLAN, parsePlan, SERVICE_PLAN, TOKEN, withoutKubeconfigForStatus } from './plan-fixtures.ts';

const COMMANDS = ['apply', 'resume', 'status', 'verify', 'rollback', 'restore'] as const;
const KC = { kubeconfig: KUBECONFIG };

const cases: BadInputCase[] = [];

// ---- the plan file itself, for every command ----
const BINARY = Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00, 0xff, 0xfe, 0x0a, 0x00, 0x13]);
for (const cmd of COMMANDS) {
  cases.push(
    { name: `${cmd}: plan file missing`, args: [cmd, '$D/nope.yaml', ...LIVE], files: KC, code: 3, message: /cannot read plan .*nope\.yaml: no such file/ },
    { name: `${cmd}: plan is a directory`, args: [cmd, '$D/plandir', ...LIVE], files: KC, dirs: ['plandir'], code: 3, message: /plandir: it is a directory/ },
    { name: `${cmd}: plan is empty`, args: [cmd, '$D/plan.yaml', ...LIVE], files: { ...KC, 'plan.yaml': '' }, code: 3, message: /plan\.yaml: the file is empty/ },
    { name: `${cmd}: plan is not YAML`, args: [cmd, '$D/plan.yaml', ...LIVE], files: { ...KC, 'plan.yaml': 'steps: [\n  - id: a\n' }, code: 3, message: /plan\.yaml: not YAML at line/ },
    { name: `${cmd}: plan is binary`, args: [cmd, '$D/plan.yaml', ...LIVE], files: { ...KC, 'plan.yaml': BINARY }, code: 3, message: /plan\.yaml: not text \(binary data\)/ },
  );
}
cases.push(
  { name: 'apply: plan is a character device', args: ['apply', '/dev/zero', ...LIVE], files: KC, code: 3, message: /\/dev\/zero: it is a character device/ },
  { name: 'status: plan is blank lines', args: ['status', '$D/plan.yaml', ...LIVE], files: { ...KC, 'plan.yaml': '\n\n   \n' }, code: 3, message: /plan\.yaml: the file is empty/ },
);
// ---- positionals ----
COMMANDS.forEach((cmd, i) => {
  cases.push(i % 2 === 0
    ? { name: `${cmd}: no plan`, args: [cmd, ...LIVE], files: KC, code: 2, message: new RegExp(`${cmd} takes exactly one PLAN`) }
    : { name: `${cmd}: two plans`, args: [cmd, '$D/plan.yaml', '$D/other.yaml', ...LIVE], files: { ...KC, 'plan.yaml': SERVICE_PLAN }, code: 2, message: /unexpected argument .*other\.yaml/ });
});
cases.push({ name: 'apply: the plan is an empty string', args: ['apply', '', ...LIVE], files: KC, code: 2 });

// ---- fields the engine relies on ----
const field = (name: string, cmd: string, text: string, message: RegExp): BadInputCase => ({
  name, args: [cmd, '$D/plan.yaml', ...LIVE], files: { ...KC, 'plan.yaml': text }, code: 3, message,
});
const moved = (d: any) => d.mapping.findIndex((m: any) => m.action === 'move');
const stepOf = (d: any, kind: string) => d.steps.find((s: any) => s.kind === kind);
cases.push(
  field('target CIDR banana', 'apply', mutate(SERVICE_PLAN, (d) => { d.spec.serviceCIDR.target[0] = 'banana'; }),
    /plan\.yaml: spec\.serviceCIDR\.target\[0\]: "banana" is not a CIDR/),
  field('target of a family the cluster lacks', 'apply', mutate(SERVICE_PLAN, (d) => { d.spec.serviceCIDR.target = ['fd00:10::/108']; d.spec.serviceCIDR.to = ['fd00:10::/108']; }),
    /spec\.serviceCIDR\.target\[0\]: fd00:10::\/108 is IPv6, but from has no IPv6 range/),
  field('two IPv4 ranges in to', 'apply', mutate(SERVICE_PLAN, (d) => { d.spec.serviceCIDR.to.push('172.25.0.0/16'); }),
    /spec\.serviceCIDR\.to\[1\]: "172\.25\.0\.0\/16": at most one IPv4 CIDR/),
  field('target not in to', 'rollback', mutate(SERVICE_PLAN, (d) => { d.spec.serviceCIDR.to = ['172.25.0.0/16']; }),
    /spec\.serviceCIDR\.target\[0\]: 100\.32\.0\.0\/16 is not in to/),
  field('kept range outside the old range', 'apply', mutate(SERVICE_PLAN, (d) => { d.spec.serviceCIDR.kept = ['192.168.0.0/28']; }),
    /spec\.serviceCIDR\.kept\[0\]: 192\.168\.0\.0\/28 is not inside from/),
  field('target empty', 'apply', mutate(SERVICE_PLAN, (d) => { d.spec.serviceCIDR.target = []; }), /spec\.serviceCIDR\.target: must name at least one CIDR/),
  field('ServiceCIDR API version unknown', 'apply', mutate(SERVICE_PLAN, (d) => { d.spec.serviceCIDR.apiVersion = 'networking.k8s.io/v9'; }),
    /spec\.serviceCIDR\.apiVersion: "networking\.k8s\.io\/v9" is not a ServiceCIDR API version/),
  field('strategy unknown', 'apply', mutate(SERVICE_PLAN, (d) => { d.spec.strategy = 'yolo'; }), /spec\.strategy: must be one of in-place, recreate/),
  field('batchSize zero', 'restore', mutate(SERVICE_PLAN, (d) => { d.spec.options.batchSize = 0; }), /spec\.options\.batchSize: must be a whole number from 1/),
  field('plan apiVersion from the future', 'apply', mutate(SERVICE_PLAN, (d) => { d.apiVersion = 'kube-renumber.io/v2'; }),
    /plan\.yaml: apiVersion: is "kube-renumber\.io\/v2", expected kube-renumber\.io\/v1/),
  field('a Kubernetes object, not a plan', 'apply', 'apiVersion: v1\nkind: Service\nmetadata: {name: web}\n', /apiVersion: is "v1", expected kube-renumber\.io\/v1/),
  field('unknown top-level field', 'apply', mutate(SERVICE_PLAN, (d) => { d.stepz = []; }), /plan\.yaml: stepz: unknown field/),
  field('spec names nothing', 'apply', mutate(CALICO_PLAN, (d) => { d.spec = {}; }), /spec: names neither serviceCIDR, podCIDR, serviceExtension nor podExtension/),
  field('mapping namespace a list', 'apply', mutate(SERVICE_PLAN, (d) => { d.mapping[0].namespace = ['a']; }), /mapping\[0\]\.namespace: must be a string \(got a list\)/),
  field('mapping name invalid', 'resume', mutate(SERVICE_PLAN, (d) => { d.mapping[0].name = 'Not_A_Name'; }), /mapping\[0\]\.name: "Not_A_Name" is not a valid name/),
  field('mapped address outside the target', 'apply', mutate(SERVICE_PLAN, (d) => { d.mapping[moved(d)].to[0] = '10.99.0.1'; }),
    /mapping\[\d+\]\.to\[0\]: "10\.99\.0\.1" is not inside spec\.serviceCIDR\.target/),
  field('Service mapped twice', 'apply', mutate(SERVICE_PLAN, (d) => { d.mapping.push(d.mapping[0]); }), /mapping\[\d+\]: [a-z-]+\/[a-z-]+ is mapped twice/),
  field('step id used twice', 'apply', mutate(SERVICE_PLAN, (d) => { d.steps[3].id = d.steps[2].id; }), /steps\[3\]\.id: ".*" is used twice/),
  field('step kind unknown', 'status', mutate(SERVICE_PLAN, (d) => { d.steps[1].kind = 'explode'; }), /steps\[1\]\.kind: must be one of .* \(got "explode"\)/),
  field('gate step without its gate', 'apply', mutate(SERVICE_PLAN, (d) => { delete stepOf(d, 'gate').gate; }), /steps\[\d+\]\.gate: missing \(a gate step needs one\)/),
  field('step item address banana', 'resume', mutate(SERVICE_PLAN, (d) => { stepOf(d, 'move-services').items[0].from[0] = 'banana'; }),
    /steps\[\d+\]\.items\[0\]\.from\[0\]: "banana" is not an IP address/),
  field('move-kubernetes without its item', 'apply', mutate(SERVICE_PLAN, (d) => { stepOf(d, 'move-kubernetes').items = []; }),
    /steps\[\d+\]\.items: a move-kubernetes step names what it works on/),
  field('Pod CIDR step in a Service plan', 'apply', mutate(SERVICE_PLAN, (d) => { d.steps.push({ id: 'restart-pods', kind: 'restart-pods', description: 'x', rollback: 'x' }); }),
    /steps\[\d+\]\.kind: restart-pods belongs to a Pod CIDR migration, but the plan has no spec\.podCIDR/),
  field('pod target banana', 'apply', mutate(CALICO_PLAN, (d) => { d.spec.podCIDR.to[0] = 'banana'; }), /spec\.podCIDR\.to\[0\]: "banana" is not a CIDR/),
  field('new pool outside the pod target', 'resume', mutate(CALICO_PLAN, (d) => { d.spec.podCIDR.calico.newPools[0].cidr = '10.200.0.0/16'; }),
    /spec\.podCIDR\.calico\.newPools\[0\]\.cidr: 10\.200\.0\.0\/16 is not inside spec\.podCIDR\.to/),
  field('node podCIDR outside the pod target', 'rollback', mutate(NODE_PLAN, (d) => { d.spec.podCIDR.node.nodes[0].to = ['10.200.0.0/24']; }),
    /spec\.podCIDR\.node\.nodes\[0\]\.to\[0\]: 10\.200\.0\.0\/24 is not inside spec\.podCIDR\.to/),
  field('drain-node without its node', 'apply', mutate(NODE_PLAN, (d) => { delete stepOf(d, 'drain-node').items; }), /steps\[\d+\]\.items: a drain-node step names what it works on/),
  field('two YAML documents', 'apply', `${SERVICE_PLAN}---\n${SERVICE_PLAN}`, /plan\.yaml: not YAML/),
  field('a step that is null', 'apply', JSON.stringify({ ...parsePlan(SERVICE_PLAN), steps: [null] }), /steps\[0\]: must be a mapping \(got null\)/),
);

// ---- flags: checked before the plan, the state directory and the cluster ----
const flag = (name: string, cmd: string, extra: string[], message?: RegExp): BadInputCase => ({
  name, args: [cmd, '$D/plan.yaml', ...extra, ...LIVE], files: { ...KC, 'plan.yaml': SERVICE_PLAN }, code: 2, message,
});
cases.push(
  flag('apply --timeout 0', 'apply', ['--timeout', '0'], /--timeout 0 must be more than 0/),
  flag('apply --timeout banana', 'apply', ['--timeout', 'banana'], /--timeout banana is not a duration/),
  flag('apply --propagation-delay beyond any timer', 'apply', ['--propagation-delay', '99999999999h'], /--propagation-delay 99999999999h is too long/),
  flag('apply --dry-run maybe', 'apply', ['--dry-run=maybe'], /--dry-run=maybe must be none, client or server/),
  flag('apply --ack-gate not in the plan', 'apply', ['--ack-gate', 'pod-cidr-config'], /--ack-gate "pod-cidr-config" is not a gate of .*plan\.yaml \(its gates: restart-apiservers/),
  flag('apply --only a step not in the plan', 'apply', ['--only', 'move-tier-9-*'], /--only "move-tier-9-\*" names no step of the plan \(its steps: /),
  flag('apply --skip with an empty entry', 'apply', ['--skip', 'verify,'], /--skip needs a step id of the plan/),
  flag('resume --skip with a space', 'resume', ['--skip', 'move dns'], /--skip "move dns" is not a step id or pattern/),
  flag('apply --only and --skip of the same step', 'apply', ['--only', 'verify', '--skip', 'verify'], /--only and --skip together leave no step to run/),
  flag('status --only', 'status', ['--only', 'verify']),
  flag('apply -f', 'apply', ['-f', '$D/plan.yaml'], /apply does not take --from-file/),
  flag('apply --namespace', 'apply', ['-n', 'shop'], /apply does not take --namespace/),
  flag('resume --timeout 0', 'resume', ['--timeout', '0'], /--timeout 0 must be more than 0/),
  flag('verify --timeout: a bad duration', 'verify', ['--timeout', 'banana'], /--timeout banana is not a duration/),
  flag('rollback --cluster-domain with underscores', 'rollback', ['--cluster-domain', 'My_Cluster.local'], /--cluster-domain "My_Cluster\.local" is not a DNS domain/),
  flag('restore --propagation-delay banana', 'restore', ['--propagation-delay', 'banana'], /--propagation-delay banana is not a duration/),
  flag('status -o xml', 'status', ['-o', 'xml'], /-o xml is not a known output format/),
  { name: 'apply: a good plan, the cluster unreachable: exit 4 and no state directory left', args: ['apply', '$D/plan.yaml', '--yes', ...LIVE], files: { ...KC, 'plan.yaml': SERVICE_PLAN }, code: 4, message: /127\.0\.0\.1/ },
  { name: 'resume: a good plan, the cluster unreachable: exit 4 and no state directory left', args: ['resume', '$D/plan.yaml', ...LIVE], files: { ...KC, 'plan.yaml': SERVICE_PLAN }, code: 4, message: /127\.0\.0\.1/ },
  { name: 'apply: a bad flag wins over a missing plan', args: ['apply', '$D/nope.yaml', '--timeout', '0', ...LIVE], files: KC, code: 2, message: /--timeout 0 must be more than 0/ },
  { name: 'apply: bad flag, token never printed', args: ['apply', '$D/plan.yaml', '--timeout', 'x', ...LIVE], files: { ...KC, 'plan.yaml': SERVICE_PLAN }, code: 2, secrets: [TOKEN] },
  { name: 'apply: bad plan, token never printed', args: ['apply', '$D/plan.yaml', ...LIVE], files: { ...KC, 'plan.yaml': 'kind: [' }, code: 3, secrets: [TOKEN] },
);

withoutKubeconfigForStatus(cases);
corpus('plans and flags of apply, resume, status, verify, rollback, restore', cases);
