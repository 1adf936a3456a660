/**
 * The bad-input corpus for the command line: unknown flags, missing values, bad CIDRs, numbers, durations, names,
 * output formats and stray positionals, for every command. All of them are exit 2 (a bad value on the command
 * line), checked before any cluster is read; offline input (-f) keeps the rest from going live.
 */
import { corpus, ROOT, type BadInputCase } from './harness.ts';

const KOPS = `${ROOT}examples/kops-tailscale`;
const KUBEADM = `${ROOT}examples/kubeadm-exhausted`;
const ALL = ['inspect', 'calc', 'suggest', 'plan', 'apply', 'resume', 'status', 'verify', 'rollback', 'restore', 'probe'];
/** Arguments that make each command otherwise valid, so the flag under test is the only problem. */
const VALID: Record<string, string[]> = {
  inspect: ['-f', KOPS],
  calc: ['10.0.0.0/16'],
  suggest: ['--for', 'services', '-f', KOPS],
  plan: ['--service-cidr', '10.200.0.0/16', '-f', KOPS],
  apply: ['plan.yaml'],
  resume: ['plan.yaml'],
  status: ['plan.yaml'],
  verify: ['plan.yaml'],
  rollback: ['plan.yaml'],
  restore: ['plan.yaml'],
  probe: ['--service', 'web', '--dns-server', '10.0.0.10', '--duration', '1s'],
};

const cases: BadInputCase[] = [];
const add = (name: string, args: string[], message?: RegExp, extra: Partial<BadInputCase> = {}): void => {
  // A generous limit: a hang is still caught, a slow start on a busy machine is not one.
  cases.push({ name, args, code: 2, timeoutMs: 60_000, ...(message ? { message } : {}), ...extra });
};

/** Which commands take each global flag (verbose, help and -o: every one); the others refuse it with exit 2. */
const CLUSTER_READERS = ['inspect', 'suggest', 'plan'];
// status reads the cluster's copy of the run's state when its state directory holds no journal
const LIVE = ['inspect', 'suggest', 'plan', 'apply', 'resume', 'status', 'verify', 'rollback', 'restore', 'probe'];
const TAKES: Record<string, string[]> = {
  kubeconfig: LIVE, context: LIVE, 'request-timeout': LIVE,
  namespace: ['probe'], 'from-file': CLUSTER_READERS, avoid: CLUSTER_READERS, config: CLUSTER_READERS,
};
/** A good value of each flag: refused only because the command does not take it. */
const GOOD: Record<string, string> = {
  kubeconfig: 'kubeconfig', context: 'prod', 'request-timeout': '5s', namespace: 'shop', 'from-file': KOPS, avoid: '10.0.0.0/8', config: 'config.yaml',
};
const refused = (cmd: string, flag: string) => new RegExp(`^${cmd} does not take --${flag}: `);

// ---- every command: unknown flags, missing values, global values checked before anything runs ----
for (const cmd of ALL) {
  const takes = (flag: string) => TAKES[flag]!.includes(cmd);
  add(`${cmd}: unknown long flag`, [cmd, ...VALID[cmd]!, '--bogus'], /bogus/);
  add(`${cmd}: --request-timeout without a value`, [cmd, ...VALID[cmd]!, '--request-timeout'], /request-timeout/);
  add(`${cmd}: --request-timeout far too long`, [cmd, ...VALID[cmd]!, '--request-timeout', '99999999999h'],
    takes('request-timeout') ? /--request-timeout 99999999999h is too long: at most 24h/ : refused(cmd, 'request-timeout'));
  add(`${cmd}: --avoid not a CIDR`, [cmd, ...VALID[cmd]!, '--avoid', 'banana'], takes('avoid') ? /--avoid: invalid CIDR "banana"/ : refused(cmd, 'avoid'));
  add(`${cmd}: empty --context`, [cmd, ...VALID[cmd]!, '--context', ''], takes('context') ? /--context needs a value/ : refused(cmd, 'context'));
  add(`${cmd}: bad --namespace`, [cmd, ...VALID[cmd]!, '-n', 'Bad_NS'], takes('namespace') ? /--namespace "Bad_NS" is not a valid namespace name/ : refused(cmd, 'namespace'));
  // a global flag the command has no use for is refused, not ignored (good value, nothing else wrong)
  for (const flag of Object.keys(TAKES).filter((f) => !takes(f))) {
    add(`${cmd}: --${flag} is refused, not ignored`, [cmd, ...VALID[cmd]!, `--${flag}`, GOOD[flag]!], refused(cmd, flag));
  }
}

// ---- unknown command, malformed flag syntax ----
add('unknown command', ['frobnicate'], /unknown command "frobnicate"/);
add('unknown short flag', ['inspect', '-f', KOPS, '-X'], /-X/);
add('--request-timeout not a duration', ['verify', 'plan.yaml', '--request-timeout', 'soon'], /--request-timeout soon is not a duration/);
add('boolean flag given a value', ['inspect', '-f', KOPS, '--exit-code=yes'], /exit-code/);
add('flag value looks like a flag', ['suggest', '--for', '--nodes', '3', '-f', KOPS], /--for/);
add('missing value at the end', ['suggest', '-f', KOPS, '--for'], /--for/);
add('--request-timeout 25h', ['inspect', '-f', KOPS, '--request-timeout', '25h'], /at most 24h/);
// --request-timeout 0 is no timeout, as kubectl reads it (test/unit/cli.parity.test.ts); a negative one is refused
add('--request-timeout negative', ['inspect', '-f', KOPS, '--request-timeout=-1s'], /--request-timeout -1s must not be negative/);
add('--request-timeout negative Go duration', ['inspect', '-f', KOPS, '--request-timeout=-1m30s'], /--request-timeout -1m30s must not be negative/);
add('--request-timeout unknown unit', ['inspect', '-f', KOPS, '--request-timeout', '1x'], /--request-timeout 1x is not a duration \(e\.g\. 30s, 1m30s, 500ms\)/);
add('--request-timeout unit without a number', ['inspect', '-f', KOPS, '--request-timeout', 'm30s'], /--request-timeout m30s is not a duration/);
add('--request-timeout Go duration too long', ['inspect', '-f', KOPS, '--request-timeout', '23h59m60.5s'], /--request-timeout 23h59m60\.5s is too long: at most 24h/);
add('--timeout 1x', ['apply', 'plan.yaml', '--timeout', '1x'], /--timeout 1x is not a duration/);
add('--timeout 0', ['apply', 'plan.yaml', '--timeout', '0s'], /--timeout 0s must be more than 0/);
add('--rollout-timeout -1s', ['resume', 'plan.yaml', '--rollout-timeout=-1s'], /--rollout-timeout -1s must not be negative/);
add('--propagation-delay -1s', ['apply', 'plan.yaml', '--propagation-delay', '-1s'], /--propagation-delay/);
add('--propagation-delay=-1s', ['apply', 'plan.yaml', '--propagation-delay=-1s'], /--propagation-delay -1s must not be negative/);
add('--propagation-delay 1h1m', ['apply', 'plan.yaml', '--propagation-delay', '24h1m'], /--propagation-delay 24h1m is too long: at most 24h/);
add('--node-interval -1s', ['resume', 'plan.yaml', '--node-interval=-1s'], /--node-interval -1s must not be negative/);
add('--node-interval 1x', ['apply', 'plan.yaml', '--node-interval', '1x'], /--node-interval 1x is not a duration/);
add('--node-interval 1h1s', ['apply', 'plan.yaml', '--node-interval', '1h0m1s'], /--node-interval 1h0m1s is too long: at most 1h/);
add('probe --interval 1x', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--interval', '1x'], /--interval 1x is not a duration/);
add('probe --duration 0', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--duration', '0'], /--duration must be more than 0/);
add('probe --duration 168h1s', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--duration', '168h0m1s'], /--duration 168h0m1s is too long: at most 168h/);

// ---- kubectl habits: --flag=value, -o=FORMAT, did you mean, --no-headers, version, help, completion ----
add('unknown flag: did you mean', ['inspect', '--kubconfig', 'x'], /^unknown flag --kubconfig for inspect \(did you mean --kubeconfig or --config\?\)$/);
add('unknown flag with =: did you mean', ['plan', '--service-cdr=10.200.0.0/16', '-f', KOPS], /^unknown flag --service-cdr for plan \(did you mean --service-cidr\?\)$/);
add('unknown flag far from any', ['suggest', '--zzzzzz', '-f', KOPS], /^unknown flag --zzzzzz for suggest \(see "kube-renumber suggest --help"\)$/);
add('unknown command: did you mean', ['inpsect', '-f', KOPS], /^unknown command "inpsect" \(did you mean inspect\?\)$/);
add('unknown command as the plugin', ['plna'], /^unknown command "plna" \(did you mean plan\?\)$/, { env: { KUBECTL_PLUGINS_CALLER: '/usr/bin/kubectl' } });
add('unknown flag as the plugin', ['calc', '10.0.0.0/8', '--bogus'], /see "kubectl renumber calc --help"/, { env: { KUBECTL_PLUGINS_CALLER: '/usr/bin/kubectl' } });
add('-o=xml', ['inspect', '-f', KOPS, '-o=xml'], /^-o xml is not a known output format/);
add('--output=', ['calc', '10.0.0.0/8', '--output='], /--output needs a value/);
add('value missing before a flag', ['plan', '--service-cidr', '--pod-cidr', '10.0.0.0/14', '-f', KOPS], /^--service-cidr needs a value, and the next word looks like a flag/);
add('--no-headers with -o json', ['inspect', '-f', KOPS, '--no-headers', '-o', 'json'], /^--no-headers applies to table output, not -o json/);
add('--no-headers with -o=yaml', ['calc', '10.0.0.0/8', '-o=yaml', '--no-headers'], /^--no-headers applies to table output, not -o yaml/);
add('--no-headers with -o markdown', ['plan', '--service-cidr', '10.200.0.0/16', '-f', KOPS, '--no-headers', '-o', 'markdown'], /^--no-headers applies to table output, not -o markdown/);
add('--no-headers given a value', ['calc', '10.0.0.0/8', '--no-headers=true'], /^--no-headers takes no value/);
add('--no-headers on version', ['version', '--no-headers'], /^version does not take --no-headers/);
add('version --bogus', ['version', '--bogus'], /^unknown flag --bogus for version/);
add('version with an argument', ['version', 'now'], /unexpected argument "now": version takes no arguments/);
add('version -o xml', ['version', '-o', 'xml'], /-o xml is not a known output format/);
add('help for an unknown command', ['help', 'inspcet'], /^unknown command "inspcet" \(did you mean inspect\?\)$/);
add('completion for an unknown shell', ['completion', 'tcsh'], /^completion tcsh: unknown shell \(use bash, zsh, fish\)$/);
add('completion without a shell', ['completion'], /completion takes exactly one SHELL, got none/);
add('completion -o json', ['completion', 'bash', '-o', 'json'], /^completion does not take --output/);
add('--request-timeout days', ['inspect', '-f', KOPS, '--request-timeout', '1d'], /not a duration/);
add('--request-timeout exponent', ['inspect', '-f', KOPS, '--request-timeout', '1e3s'], /not a duration/);
add('--namespace too long', ['probe', ...VALID.probe!, '-n', 'a'.repeat(64)], /not a valid namespace name/);
add('--namespace with a slash', ['probe', '-n', 'kube-system/x', '--kinds', 'kubernetes', '--kubernetes-address', '10.0.0.1'], /not a valid namespace name/);

// ---- empty and blank values ----
add('empty --kubeconfig', ['inspect', '--kubeconfig', ''], /--kubeconfig needs a value/);
add('blank --kubeconfig', ['inspect', '--kubeconfig', '  '], /--kubeconfig needs a value/);
add('empty --config', ['inspect', '-f', KOPS, '--config', ''], /--config needs a value/);
add('empty -o', ['inspect', '-f', KOPS, '-o', ''], /--output needs a value/);
add('empty --from-file', ['inspect', '-f', ''], /--from-file needs a value/);
add('empty --for', ['suggest', '--for', '', '-f', KOPS], /--for needs a value/);
add('empty --service-cidr', ['plan', '--service-cidr', '', '-f', KOPS], /--service-cidr needs a value/);
add('blank --pod-cidr', ['plan', '--pod-cidr', ' ', '-f', KOPS], /--pod-cidr needs a value/);
add('empty --avoid', ['inspect', '-f', KOPS, '--avoid', ''], /--avoid needs a value/);
add('empty --node-hook', ['plan', '--pod-cidr', '10.0.0.0/14', '--ipam', 'node', '--node-hook', '', '-f', KUBEADM], /--node-hook needs a value/);

// ---- output formats ----
for (const [cmd, fmt] of [['inspect', 'xml'], ['calc', 'csv'], ['suggest', 'markdown'], ['suggest', 'html'], ['calc', 'html'], ['plan', 'svg'], ['probe', 'jsonl'], ['inspect', 'JSON'], ['calc', 'yaml,json']] as const) {
  add(`${cmd}: -o ${fmt}`, [cmd, ...VALID[cmd]!, '-o', fmt], new RegExp(`-o ${fmt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a known output format`));
  // -o=FORMAT is read as -o FORMAT (kubectl's pflag): the same refusal, not a format named "=FORMAT"
  add(`${cmd}: -o=${fmt}`, [cmd, ...VALID[cmd]!, `-o=${fmt}`], new RegExp(`^-o ${fmt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a known output format`));
}

// ---- stray positionals ----
add('inspect: a path without -f', ['inspect', 'examples/x'], /unexpected argument "examples\/x": inspect takes no arguments besides flags \(did you mean -f examples\/x\?\)/);
add('inspect: an existing directory without -f', ['inspect', KOPS], /did you mean -f /);
add('inspect: a yaml file name without -f', ['inspect', 'dump.yaml'], /did you mean -f dump\.yaml\?/);
add('inspect: a CIDR as a positional', ['inspect', '-f', KOPS, '10.8.0.0/16'], /did you mean --avoid 10\.8\.0\.0\/16\?/);
add('inspect: a word after the flags', ['inspect', '-f', KOPS, 'now'], /unexpected argument "now": inspect takes no arguments besides flags/);
add('inspect: words after --', ['inspect', '-f', KOPS, '--', '-v'], /unexpected argument "-v"/);
add('suggest: two values for --for', ['suggest', '--for', 'pods', 'services', '-f', KOPS], /unexpected argument "services".*did you mean --for services,pods\?/);
add('suggest: stray word', ['suggest', 'pods', '-f', KOPS], /unexpected argument "pods"/);
// a dual-stack cluster suggests for both families; a --node-mask would fit only one of them
const DUAL = [
  'apiVersion: v1', 'kind: List', 'items:',
  '- {apiVersion: v1, kind: Node, metadata: {name: n1}, spec: {podCIDR: 10.244.0.0/24, podCIDRs: [10.244.0.0/24, "fd00:10:244::/64"]}, status: {addresses: [{type: InternalIP, address: 192.168.1.10}]}}',
  '- {apiVersion: v1, kind: Pod, metadata: {name: kube-controller-manager-m1, namespace: kube-system, labels: {component: kube-controller-manager, tier: control-plane}}, spec: {containers: [{name: kube-controller-manager, command: [kube-controller-manager, "--cluster-cidr=10.244.0.0/16,fd00:10:244::/56"]}]}}', '',
].join('\n');
add('suggest: --node-mask without --family on a dual-stack cluster', ['suggest', '--for', 'pods', '--node-mask', '24', '-f', '$D/dual.yaml'],
  /--node-mask 24 on a dual-stack cluster needs --family 4 or 6/, { files: { 'dual.yaml': DUAL } });
add('suggest: a CIDR as a positional', ['suggest', '--for', 'pods', '-f', KOPS, '10.8.0.0/16'], /did you mean --avoid/);
add('plan: a CIDR as a positional', ['plan', '10.200.0.0/16', '-f', KOPS], /did you mean --service-cidr 10\.200\.0\.0\/16 or --pod-cidr 10\.200\.0\.0\/16\?/);
add('plan: a path as a positional', ['plan', '--service-cidr', '10.200.0.0/16', 'examples/kops'], /did you mean -f examples\/kops\?/);
add('calc: two CIDRs', ['calc', '10.0.0.0/16', '10.1.0.0/16'], /unexpected argument "10\.1\.0\.0\/16": calc takes exactly one CIDR/);
add('calc: no CIDR', ['calc'], /calc takes exactly one CIDR, got none/);
add('calc: no CIDR, only flags', ['calc', '--node-mask', '24'], /calc takes exactly one CIDR/);
add('probe: a Service as a positional', ['probe', 'default/web'], /did you mean --service default\/web\?/);
add('probe: an address as a positional', ['probe', '--service', 'web', '10.0.0.1'], /unexpected argument "10\.0\.0\.1": probe takes no arguments/);
add('apply: two plans', ['apply', 'a.yaml', 'b.yaml'], /unexpected argument "b\.yaml": apply takes exactly one PLAN/);
add('status: no plan', ['status'], /status takes exactly one PLAN, got none/);
add('verify: three plans', ['verify', 'a', 'b', 'c'], /unexpected argument "b"/);

// ---- CIDRs: calc's positional, --avoid, --service-cidr, --pod-cidr ----
const BAD_CIDRS: Array<[string, string, RegExp]> = [
  ['host bits', '10.0.0.1/8', /host bits are set \(did you mean 10\.0\.0\.0\/8\?\)/],
  ['IPv4 /33', '10.0.0.0/33', /prefix must be 0–32/],
  ['IPv6 /129', 'fd00::/129', /fd00::\/129/],
  ['IPv6 triple colon', 'fd00:::/8', /stray ":"/],
  ['IPv6 non-hex', 'gggg::/16', /hex digits/],
  ['IPv6 nine groups', '1:2:3:4:5:6:7:8:9/128', /8 groups/],
  ['octet 999', '999.1.1.1/32', /999 is out of range/],
  ['leading zero', '010.0.0.0/8', /leading zero/],
  ['no prefix', '10.0.0.0', /"10\.0\.0\.0".*prefix/],
  ['prefix only', '/8', /missing address/],
  ['empty prefix', '10.0.0.0/', /missing prefix length/],
  ['inner whitespace', '10.0.0.0/ 8', /whitespace/],
  ['zone id', 'fe80::1%eth0/64', /zone/],
  ['three octets', '10.0.0/8', /4 dot-separated octets/],
  ['hex IPv4', '0x0a000000/8', /not an IPv4 or IPv6 address/],
  ['negative prefix', '10.0.0.0/-1', /prefix must be 0–32/],
  ['a word', 'banana', /banana/],
];
for (const [what, cidr, msg] of BAD_CIDRS) add(`calc: ${what}`, ['calc', cidr], msg);
for (const [what, cidr, msg] of BAD_CIDRS.slice(0, 10)) add(`--avoid: ${what}`, ['inspect', '-f', KOPS, '--avoid', cidr], msg);
add('--avoid: reason without a CIDR', ['inspect', '-f', KOPS, '--avoid', '=office'], /--avoid: invalid CIDR ""/);
add('--avoid: bad CIDR with a reason', ['suggest', '--for', 'pods', '-f', KOPS, '--avoid', '10.0.0.1/8=vpn'], /--avoid: .*host bits/);
add('--avoid on calc: refused before its value is judged', ['calc', '10.0.0.0/16', '--avoid', '10.0.0.0/33'], /^calc does not take --avoid: it does address math/);
for (const [what, cidr, msg] of BAD_CIDRS.slice(0, 9)) add(`--service-cidr: ${what}`, ['plan', '--service-cidr', cidr, '-f', KOPS], msg);
for (const [what, cidr, msg] of BAD_CIDRS.slice(0, 9)) add(`--pod-cidr: ${what}`, ['plan', '--pod-cidr', cidr, '-f', KOPS], msg);
add('--service-cidr: checked before the cluster is read', ['plan', '--service-cidr', '10.0.0.1/8'], /--service-cidr 10\.0\.0\.1\/8 refused: .*host bits/);
add('--pod-cidr: checked before the cluster is read', ['plan', '--pod-cidr', '10.0.0.0/33'], /--pod-cidr 10\.0\.0\.0\/33 refused/);
add('--service-cidr: two of one family', ['plan', '--service-cidr', '10.200.0.0/16,10.201.0.0/16', '-f', KOPS], /two IPv4 ranges/);
add('--pod-cidr: two of one family', ['plan', '--pod-cidr', '10.0.0.0/14,10.8.0.0/14', '-f', KOPS], /two IPv4 ranges/);
add('--service-cidr: wrong family', ['plan', '--service-cidr', 'fd00:10::/108', '-f', KOPS], /refused: .*IPv6, which the cluster's service range does not use/);
add('--service-cidr: the Tailscale range', ['plan', '--service-cidr', '100.100.0.0/16', '-f', KOPS], /refused: .*overlaps 100\.64\.0\.0\/10/);

// ---- --pod-cidr against the cluster: refused like --service-cidr ----
add('--pod-cidr: the current pod range (kOps)', ['plan', '--pod-cidr', '100.96.0.0/11', '-f', KOPS], /--pod-cidr 100\.96\.0\.0\/11 refused: 100\.96\.0\.0\/11 is the current pod range: nothing to move/);
add('--pod-cidr: the current pod range (kubeadm)', ['plan', '--pod-cidr', '10.233.64.0/18', '-f', KUBEADM], /is the current pod range: nothing to move/);
add('--pod-cidr: wrong family', ['plan', '--pod-cidr', 'fd00:20::/48', '-f', KOPS], /fd00:20::\/48 is IPv6, which the cluster's pod ranges do not use \(100\.96\.0\.0\/11\)/);
add('--pod-cidr: wrong family (kubeadm, node IPAM)', ['plan', '--pod-cidr', 'fd00:20::/48', '--ipam', 'node', '-f', KUBEADM], /is IPv6, which the cluster's pod ranges do not use/);
add('--pod-cidr: contains the current pod range', ['plan', '--pod-cidr', '10.233.0.0/16', '-f', KUBEADM], /contains the current pod range 10\.233\.64\.0\/18/);
add('--pod-cidr: contains pod and service ranges', ['plan', '--pod-cidr', '100.64.0.0/10', '-f', KOPS], /contains the current pod range 100\.96\.0\.0\/11/);
add('--pod-cidr: inside the current pod range', ['plan', '--pod-cidr', '10.233.96.0/19', '-f', KUBEADM], /overlaps 10\.233\.64\.0\/18/);
add('--pod-cidr: the Service range', ['plan', '--pod-cidr', '10.233.0.0/18', '-f', KUBEADM], /overlaps 10\.233\.0\.0\/18 \(the current service range/);
add('--pod-cidr: inside the Service range', ['plan', '--pod-cidr', '10.233.0.0/20', '-f', KUBEADM], /overlaps 10\.233\.0\.0\/18 \(the current service range/);
add('--pod-cidr: the node network', ['plan', '--pod-cidr', '192.168.0.0/16', '-f', KUBEADM], /overlaps 192\.168\.10\.0\/24/);
// ---- --pod-cidr on a cluster whose pod addresses Cilium's own IPAM owns: refused with Cilium's reason, --ipam or not ----
const ciliumDump = (data: string): string => [
  'apiVersion: v1', 'kind: List', 'items:',
  '- {apiVersion: v1, kind: Node, metadata: {name: n1}, spec: {podCIDR: 10.0.1.0/24, podCIDRs: [10.0.1.0/24]}, status: {addresses: [{type: InternalIP, address: 192.168.1.10}]}}',
  '- {apiVersion: v1, kind: Pod, metadata: {name: cilium-x2k9p, namespace: kube-system, labels: {k8s-app: cilium}}, spec: {hostNetwork: true}, status: {podIP: 192.168.1.10}}',
  `- {apiVersion: v1, kind: ConfigMap, metadata: {name: cilium-config, namespace: kube-system}, data: {${data}}}`, '',
].join('\n');
const CILIUM_POOL = { files: { 'cluster.yaml': ciliumDump('cluster-pool-ipv4-cidr: 10.0.0.0/8') } };
add('--pod-cidr: Cilium cluster-pool (ipam unset)', ['plan', '--pod-cidr', '172.16.0.0/16', '-f', '$D/cluster.yaml'],
  /refused: Cilium cluster-pool IPAM .*Don't change any existing elements of the clusterPoolIPv4PodCIDRList list/, CILIUM_POOL);
add('--pod-cidr: Cilium cluster-pool with --ipam node', ['plan', '--pod-cidr', '172.16.0.0/16', '--ipam', 'node', '-f', '$D/cluster.yaml'],
  /refused: Cilium cluster-pool IPAM .*neither --ipam node/, CILIUM_POOL);
add('--pod-cidr: Cilium cluster-pool with --ipam calico', ['plan', '--pod-cidr', '172.16.0.0/16', '--ipam', 'calico', '-f', '$D/cluster.yaml'],
  /refused: Cilium cluster-pool IPAM/, CILIUM_POOL);
add('--pod-cidr: Cilium cluster-pool, reason before the overlap', ['plan', '--pod-cidr', '192.168.0.0/16', '-f', '$D/cluster.yaml'],
  /refused: Cilium cluster-pool IPAM/, CILIUM_POOL);
add('--pod-cidr: Cilium multi-pool without its CiliumPodIPPools', ['plan', '--pod-cidr', '172.16.0.0/16', '-f', '$D/cluster.yaml'],
  /refused: no CiliumPodIPPool in the input/, { files: { 'cluster.yaml': ciliumDump('ipam: multi-pool') } });
add('--pod-cidr: Cilium multi-pool with --ipam node', ['plan', '--pod-cidr', '172.16.0.0/16', '--ipam', 'node', '-f', '$D/cluster.yaml'],
  /--ipam node is refused: Cilium multi-pool IPAM hands out pod addresses here, and only the cilium-multi-pool path moves them/, { files: { 'cluster.yaml': ciliumDump('ipam: multi-pool') } });
add('--pod-cidr: --ipam cilium-multi-pool on Calico', ['plan', '--pod-cidr', '10.0.0.0/11', '--ipam', 'cilium-multi-pool', '-f', KOPS],
  /--ipam cilium-multi-pool is refused: Calico IPAM.* only the calico path moves them/);
add('--pod-cidr: overlaps the new --service-cidr', ['plan', '--pod-cidr', '10.0.0.0/14', '--service-cidr', '10.1.0.0/16', '-f', KUBEADM], /10\.0\.0\.0\/14 overlaps the new Service CIDR 10\.1\.0\.0\/16/);
add('--pod-cidr: equal to the new --service-cidr', ['plan', '--pod-cidr', '10.40.0.0/16', '--service-cidr', '10.40.0.0/16', '-f', KUBEADM], /overlaps the new Service CIDR/);
add('--pod-cidr: an --avoid range', ['plan', '--pod-cidr', '10.0.0.0/14', '--avoid', '10.2.0.0/16=vpn', '-f', KUBEADM], /overlaps 10\.2\.0\.0\/16 \(avoided range/);

// ---- numbers ----
const NUMBER_CASES: Array<[string, string[], RegExp]> = [
  ['suggest --headroom 1e308', ['suggest', '--for', 'services', '--headroom', '1e308', '-f', KOPS], /--headroom 1e308 must be a number from 1 to 1000/],
  ['suggest --headroom Infinity', ['suggest', '--for', 'pods', '--headroom', 'Infinity', '-f', KOPS], /--headroom Infinity/],
  ['suggest --headroom NaN', ['suggest', '--for', 'pods', '--headroom', 'NaN', '-f', KOPS], /--headroom NaN/],
  ['suggest --headroom 0.5', ['suggest', '--for', 'pods', '--headroom', '0.5', '-f', KOPS], /--headroom 0\.5/],
  ['suggest --headroom 1001', ['suggest', '--for', 'services', '--headroom', '1001', '-f', KOPS], /--headroom 1001/],
  ['suggest --headroom hex', ['suggest', '--for', 'services', '--headroom', '0x10', '-f', KOPS], /--headroom 0x10/],
  ['suggest --headroom negative', ['suggest', '--for', 'services', '--headroom=-2', '-f', KOPS], /--headroom -2/],
  ['suggest --nodes 0', ['suggest', '--for', 'pods', '--nodes', '0', '-f', KOPS], /--nodes 0 must be a whole number from 1/],
  ['suggest --nodes fraction', ['suggest', '--for', 'pods', '--nodes', '1.5', '-f', KOPS], /--nodes 1\.5/],
  ['suggest --nodes huge', ['suggest', '--for', 'pods', '--nodes', '99999999999999999999', '-f', KOPS], /--nodes 99999999999999999999/],
  ['suggest --nodes word', ['suggest', '--for', 'pods', '--nodes', 'many', '-f', KOPS], /--nodes many/],
  ['suggest --services negative', ['suggest', '--for', 'services', '--services=-1', '-f', KOPS], /--services -1/],
  ['suggest --services huge', ['suggest', '--for', 'services', '--services', '1000000000', '-f', KOPS], /--services 1000000000/],
  ['suggest --node-mask 129', ['suggest', '--for', 'pods', '--node-mask', '129', '-f', KOPS], /--node-mask 129/],
  ['suggest --node-mask 64 on IPv4', ['suggest', '--for', 'pods', '--node-mask', '64', '-f', KOPS], /--node-mask 64 is out of range for IPv4/],
  ['suggest --alternatives 101', ['suggest', '--for', 'pods', '--alternatives', '101', '-f', KOPS], /--alternatives 101/],
  ['suggest --min-prefix 0', ['suggest', '--for', 'pods', '--min-prefix', '0', '-f', KOPS], /--min-prefix 0/],
  ['suggest --min-prefix 129', ['suggest', '--for', 'pods', '--min-prefix', '129', '-f', KOPS], /--min-prefix 129/],
  ['suggest --min-prefix word', ['suggest', '--for', 'services', '--min-prefix', 'slash20', '-f', KOPS], /--min-prefix slash20/],
  ['suggest --min-prefix 33 on IPv4', ['suggest', '--for', 'services', '--min-prefix', '33', '-f', KOPS], /--min-prefix 33 is out of range for IPv4/],
  ['suggest --min-prefix larger than a service range may be', ['suggest', '--for', 'services', '--min-prefix', '8', '-f', KOPS], /the floor \/8 is larger than the largest service range the apiserver accepts \(\/12\)/],
  ['suggest --family 5', ['suggest', '--for', 'pods', '--family', '5', '-f', KOPS], /--family 5 must be 4 or 6/],
  ['suggest --family ipv4', ['suggest', '--for', 'pods', '--family', 'ipv4', '-f', KOPS], /--family ipv4/],
  ['suggest --for lunch', ['suggest', '--for', 'lunch', '-f', KOPS], /--for must be "pods", "services" or "services,pods"/],
  ['suggest huge need', ['suggest', '--for', 'pods', '--nodes', '1000000', '--headroom', '1000', '-f', KOPS], /need more than half of the IPv4 space/],
  ['calc --node-mask 129', ['calc', '10.0.0.0/16', '--node-mask', '129'], /--node-mask 129/],
  ['calc --node-mask shorter than the prefix', ['calc', '10.0.0.0/16', '--node-mask', '8'], /--node-mask 8 does not fit/],
  ['calc --node-mask fraction', ['calc', '10.0.0.0/16', '--node-mask', '24.5'], /--node-mask 24\.5/],
  ['calc --node-mask negative', ['calc', '10.0.0.0/16', '--node-mask=-1'], /--node-mask -1/],
  ['plan --headroom 1e308 (services)', ['plan', '--service-cidr', '10.200.0.0/16', '--headroom', '1e308', '-f', KOPS], /--headroom 1e308 must be a number from 1 to 1000/],
  ['plan --headroom 1e308 (pods)', ['plan', '--pod-cidr', '10.0.0.0/11', '--headroom', '1e308', '-f', KOPS], /--headroom 1e308/],
  ['plan --headroom 0', ['plan', '--service-cidr', '10.200.0.0/16', '--headroom', '0', '-f', KOPS], /--headroom 0/],
  ['plan --batch-size 0', ['plan', '--service-cidr', '10.200.0.0/16', '--batch-size', '0', '-f', KOPS], /--batch-size 0/],
  ['plan --batch-size 10001', ['plan', '--service-cidr', '10.200.0.0/16', '--batch-size', '10001', '-f', KOPS], /--batch-size 10001/],
  ['plan --parallel 0', ['plan', '--pod-cidr', '10.0.0.0/11', '--parallel', '0', '-f', KOPS], /--parallel 0/],
  ['plan --parallel 101', ['plan', '--pod-cidr', '10.0.0.0/11', '--parallel', '101', '-f', KOPS], /--parallel 101/],
  ['plan --block-size 129', ['plan', '--pod-cidr', '10.0.0.0/11', '--block-size', '129', '-f', KOPS], /--block-size 129/],
  ['plan --block-size /5', ['plan', '--pod-cidr', '10.0.0.0/11', '--block-size', '5', '-f', KOPS], /block size \/5 must be between \/20 and \/32/],
  ['plan --node-mask-size 64', ['plan', '--pod-cidr', '10.0.0.0/11', '--ipam', 'node', '--node-mask-size', '64', '-f', KOPS], /node podCIDR size \/64 does not fit/],
  ['plan --node-mask-size 0', ['plan', '--pod-cidr', '10.0.0.0/11', '--ipam', 'node', '--node-mask-size', '0', '-f', KOPS], /--node-mask-size 0/],
  ['plan --node-mask-size one for two families', ['plan', '--pod-cidr', '10.0.0.0/11,fd00:10:245::/56', '--ipam', 'node', '--node-mask-size', '24', '-f', KOPS], /--node-mask-size 24 gives 1 size\(s\), --pod-cidr .* has 2 families: give one size per family in the order of --pod-cidr, e\.g\. --node-mask-size 24,64/],
  ['plan --node-mask-size two for one family', ['plan', '--pod-cidr', '10.0.0.0/11', '--ipam', 'node', '--node-mask-size', '24,64', '-f', KOPS], /--node-mask-size 24,64 gives 2 size\(s\), --pod-cidr 10\.0\.0\.0\/11 has 1 family/],
  ['plan --node-mask-size empty part', ['plan', '--pod-cidr', '10.0.0.0/11,fd00:10:245::/56', '--ipam', 'node', '--node-mask-size', '24,', '-f', KOPS], /--node-mask-size 24, must be a whole number from 1 to 128 per family \(got ""\)/],
  ['probe --port 0', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--port', '0'], /--port 0/],
  ['probe --port 65536', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--port', '65536'], /--port 65536/],
  ['probe --connections 0', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--connections', '0'], /--connections 0/],
  ['probe --replicas 101', ['probe', '--deploy', '--service', 'web', '--replicas', '101'], /--replicas 101/],
];
for (const [name, args, msg] of NUMBER_CASES) add(name, args, msg);

// ---- durations ----
const DURATION_CASES: Array<[string, string[], RegExp]> = [
  ['probe --interval 0', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--interval', '0'], /--interval must be more than 0/],
  ['probe --interval word', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--interval', 'often'], /--interval often is not a duration/],
  ['probe --timeout 25h', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--timeout', '25h'], /--timeout 25h is too long: at most 24h/],
  ['probe --duration 200h', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--duration', '200h'], /--duration 200h is too long: at most 168h/],
  ['probe --duration overflow', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--duration', '9'.repeat(400)], /too long/],
  ['probe --report-every without --deploy', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--report-every', '1s'], /--report-every needs --deploy/],
  ['probe --start-timeout word', ['probe', '--deploy', '--service', 'web', '--start-timeout', 'later'], /--start-timeout later is not a duration/],
  ['probe --start-timeout 48h', ['probe', '--deploy', '--service', 'web', '--start-timeout', '48h'], /at most 24h/],
];
for (const [name, args, msg] of DURATION_CASES) add(name, args, msg);

// ---- names and free text that end up in objects, labels or requests ----
const NAME_CASES: Array<[string, string[], RegExp]> = [
  ['--pool-name with a space and a slash', ['plan', '--pod-cidr', '10.0.0.0/11', '--pool-name', 'Bad Name/x', '-f', KOPS], /--pool-name "Bad Name\/x" is not a valid Kubernetes object name/],
  ['--pool-name upper case', ['plan', '--pod-cidr', '10.0.0.0/11', '--pool-name', 'NewPool', '-f', KOPS], /--pool-name "NewPool"/],
  ['--pool-name leading dash', ['plan', '--pod-cidr', '10.0.0.0/11', '--pool-name=-pool', '-f', KOPS], /--pool-name "-pool"/],
  ['--pool-name empty label', ['plan', '--pod-cidr', '10.0.0.0/11', '--pool-name', 'a..b', '-f', KOPS], /--pool-name "a\.\.b"/],
  ['--pool-name too long', ['plan', '--pod-cidr', '10.0.0.0/11', '--pool-name', 'a'.repeat(254), '-f', KOPS], /is not a valid Kubernetes object name/],
  ['--apiserver-cert-san one word', ['plan', '--service-cidr', '10.200.0.0/16', '--apiserver-cert-san', 'banana', '-f', KOPS], /--apiserver-cert-san banana is a single-word name/],
  ['--apiserver-cert-san bad IPv4', ['plan', '--service-cidr', '10.200.0.0/16', '--apiserver-cert-san', '10.0.0.300', '-f', KOPS], /--apiserver-cert-san 10\.0\.0\.300 is not a valid IP address/],
  ['--apiserver-cert-san bad IPv6', ['plan', '--service-cidr', '10.200.0.0/16', '--apiserver-cert-san', 'fd00:::1', '-f', KOPS], /is not a valid IP address/],
  ['--apiserver-cert-san a URL', ['plan', '--service-cidr', '10.200.0.0/16', '--apiserver-cert-san', 'https://api.example.com', '-f', KOPS], /is not a valid IP address|neither an IP address nor a DNS name/],
  ['--apiserver-cert-san underscore', ['plan', '--service-cidr', '10.200.0.0/16', '--apiserver-cert-san', 'api_server.example.com', '-f', KOPS], /neither an IP address nor a DNS name/],
  ['--apiserver-cert-san one bad in a list', ['plan', '--service-cidr', '10.200.0.0/16', '--apiserver-cert-san', '10.200.0.1,nope', '-f', KOPS], /--apiserver-cert-san nope/],
  ['--tier-key with spaces', ['plan', '--service-cidr', '10.200.0.0/16', '--tier-key', 'bad key!!', '-f', KOPS], /--tier-key "bad key!!" is not a valid label or annotation key/],
  ['--tier-key two slashes', ['plan', '--service-cidr', '10.200.0.0/16', '--tier-key', 'a/b/c', '-f', KOPS], /--tier-key "a\/b\/c"/],
  ['--tier-key empty name', ['plan', '--service-cidr', '10.200.0.0/16', '--tier-key', 'example.com/', '-f', KOPS], /--tier-key "example\.com\/"/],
  ['--keep without a namespace', ['plan', '--service-cidr', '10.200.0.0/16', '--keep', 'web', '-f', KOPS], /--keep web: must be namespace\/name/],
  ['--keep bad namespace', ['plan', '--service-cidr', '10.200.0.0/16', '--keep', 'Prod/web', '-f', KOPS], /--keep Prod\/web: namespace "Prod"/],
  ['--keep dotted Service name', ['plan', '--service-cidr', '10.200.0.0/16', '--keep', 'prod/web.v2', '-f', KOPS], /name "web\.v2" is not a valid Service name/],
  ['--critical without a name', ['plan', '--pod-cidr', '10.0.0.0/11', '--critical', 'kube-system', '-f', KOPS], /--critical kube-system: must be namespace\/name/],
  ['--critical bad name', ['plan', '--pod-cidr', '10.0.0.0/11', '--critical', 'kube-system/Core_DNS', '-f', KOPS], /--critical kube-system\/Core_DNS: name "Core_DNS"/],
  ['probe --cluster-domain double dot', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--cluster-domain', 'cluster..local'], /--cluster-domain cluster\.\.local is not a domain name/],
  ['probe --cluster-domain leading dash', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--cluster-domain=-x.local'], /--cluster-domain -x\.local/],
  ['probe --http-path without a slash', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--protocol', 'http', '--http-path', 'healthz'], /--http-path "healthz" must start with "\/"/],
  ['probe --http-path with a space', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--protocol', 'http', '--http-path', '/a b'], /--http-path "\/a b"/],
  ['probe --http-path with a newline', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--protocol', 'http', '--http-path', '/a\r\nHost: x'], /--http-path/],
  ['probe --http-path with echo', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--http-path', '/healthz'], /--http-path needs --protocol http/],
  ['probe --image with a space', ['probe', '--deploy', '--service', 'web', '--image', 'node 24'], /--image "node 24" is not an image reference/],
  ['probe --image upper-case path', ['probe', '--deploy', '--service', 'web', '--image', 'library/Node:24'], /--image "library\/Node:24"/],
  ['probe --image bad tag', ['probe', '--deploy', '--service', 'web', '--image', 'node:-24'], /--image "node:-24"/],
  ['probe --image without --deploy', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--image', 'node:24'], /--image needs --deploy/],
  ['probe bad Service name', ['probe', '--service', 'Web_1', '--dns-server', '10.0.0.10'], /Service name "Web_1"/],
  ['probe bad Service port', ['probe', '--service', 'web:0', '--dns-server', '10.0.0.10'], /port must be a whole number from 1 to 65535/],
  ['probe --dns-server a name', ['probe', '--service', 'web', '--dns-server', 'kube-dns'], /--dns-server kube-dns: expected an IP address/],
  ['probe --kinds unknown', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--kinds', 'dns,ping'], /"ping" is not a client kind/],
  ['probe --kinds empty list', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--kinds', ','], /--kinds is empty/],
  ['probe --protocol ftp', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--protocol', 'ftp'], /--protocol ftp/],
  ['probe --family 5', ['probe', '--service', 'web', '--dns-server', '10.0.0.10', '--family', '5'], /--family 5 must be 4, 6 or any/],
  ['probe without Services', ['probe', '--dns-server', '10.0.0.10'], /no Services to probe/],
  ['probe without --dns-server', ['probe', '--service', 'web'], /--dns-server IP\[:PORT\] is needed/],
];
for (const [name, args, msg] of NAME_CASES) add(name, args, msg);

// ---- plan: choices and flags that need the other move ----
const PLAN_CASES: Array<[string, string[], RegExp]> = [
  ['plan without a target', ['plan', '-f', KOPS], /give --service-cidr NEW, --pod-cidr NEW, or both/],
  ['plan --strategy unknown', ['plan', '--service-cidr', '10.200.0.0/16', '--strategy', 'yolo', '-f', KOPS], /--strategy yolo must be in-place or recreate/],
  ['plan --tier-order unknown', ['plan', '--service-cidr', '10.200.0.0/16', '--tier-order', 'sideways', '-f', KOPS], /--tier-order sideways/],
  ['plan --ipam unknown', ['plan', '--pod-cidr', '10.0.0.0/11', '--ipam', 'cilium', '-f', KOPS], /--ipam cilium must be calico, node or cilium-multi-pool/],
  ['plan --block-size without --pod-cidr', ['plan', '--service-cidr', '10.200.0.0/16', '--block-size', '26', '-f', KOPS], /--block-size needs --pod-cidr/],
  ['plan --pool-name without --pod-cidr', ['plan', '--service-cidr', '10.200.0.0/16', '--pool-name', 'new-pool', '-f', KOPS], /--pool-name needs --pod-cidr/],
  ['plan --keep without --service-cidr', ['plan', '--pod-cidr', '10.0.0.0/11', '--keep', 'default/web', '-f', KOPS], /--keep needs --service-cidr/],
  ['plan --strategy without --service-cidr', ['plan', '--pod-cidr', '10.0.0.0/11', '--strategy', 'recreate', '-f', KOPS], /--strategy needs --service-cidr/],
  ['plan --pool-name with --ipam node', ['plan', '--pod-cidr', '10.0.0.0/14', '--ipam', 'node', '--pool-name', 'p', '-f', KUBEADM], /--pool-name needs --ipam calico/],
  ['plan --node-hook with --ipam calico', ['plan', '--pod-cidr', '10.0.0.0/14', '--ipam', 'calico', '--node-hook', 'true', '-f', KUBEADM], /--node-hook needs --ipam node/],
  ['inspect --fail-on unknown', ['inspect', '-f', KOPS, '--fail-on', 'fatal'], /--fail-on fatal must be one of error, warning, info/],
];
for (const [name, args, msg] of PLAN_CASES) add(name, args, msg);

// ---- an unknown --context with a kubeconfig present (and a credential that must never be printed) ----
const KUBECONFIG = [
  'apiVersion: v1', 'kind: Config', 'current-context: c',
  'clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]',
  'users: [{name: u, user: {token: flags-secret-token}}]',
  'contexts: [{name: c, context: {cluster: k, user: u}}]', '',
].join('\n');
add('unknown --context', ['inspect', '--context', 'nope'], /context "nope" is not in the kubeconfig/,
  { files: { 'home/.kube/config': KUBECONFIG }, secrets: ['flags-secret-token'] });
add('unknown --context with --kubeconfig', ['suggest', '--for', 'pods', '--kubeconfig', '$D/kc', '--context', 'other'], /context "other"/,
  { files: { kc: KUBECONFIG }, secrets: ['flags-secret-token'] });
add('bad flag value wins over a kubeconfig', ['plan', '--service-cidr', '10.200.0.0/16', '--batch-size', 'x'], /--batch-size x/,
  { files: { 'home/.kube/config': KUBECONFIG }, secrets: ['flags-secret-token'] });

// -f next to --kubeconfig/--context adds distribution configs to the live read; objects there are refused, and so are
// files without a config, before any kubeconfig is read or cluster contacted (the kubeconfig named does not exist)
for (const cmd of CLUSTER_READERS) {
  const rest = cmd === 'suggest' ? ['--for', 'services'] : cmd === 'plan' ? ['--service-cidr', '10.200.0.0/16'] : [];
  add(`${cmd}: -f with objects next to --kubeconfig`, [cmd, ...rest, '--kubeconfig', '$D/none', '-f', KUBEADM],
    /^with --kubeconfig, -f adds distribution configs .* holds \d+ Kubernetes object\(s\) \(e\.g\. [A-Za-z]+\/[a-z0-9.-]+\): leave out --kubeconfig to read the files offline/);
  add(`${cmd}: -f with no config next to --context`, [cmd, ...rest, '--context', 'prod', '-f', '$D/empty.yaml'],
    /^with --context, -f adds distribution configs to the live read, and .*empty\.yaml holds none/, { files: { 'empty.yaml': 'apiVersion: v1\nkind: List\nitems: []\n' } });
}

corpus('command-line flags and values', cases);
