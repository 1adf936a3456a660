/**
 * `npm run walkthrough`: docs/walkthrough.md, a first migration on the local testbed, written from real runs:
 * every command of the page is run here, in order, and its output (stdout and stderr as a terminal shows them,
 * without colours) is put under it. What varies from run to run (the temporary directory, ports, durations, times,
 * uids, plan ids, process ids) is replaced by fixed stand-ins, so that two runs write the same page.
 *
 *   npm run walkthrough              writes docs/walkthrough.md
 *   npm run walkthrough -- --check   writes nothing; exit 1 and the first differing lines when the page is stale
 *
 * Needs the testbed built (npm run testbed -- build). Its own testbed (XDG_RUNTIME_DIR and XDG_STATE_HOME point
 * into a temporary directory), stopped at the end whatever happens. About two minutes.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { binDir } from '../test/testbed/build.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const PAGE = join(ROOT, 'docs', 'walkthrough.md');

const OLD = '10.96.0.0/16';
const NEW = '10.100.0.0/16';
const SECOND = '10.120.0.0/16';

interface Step {
  /** prose before the command (markdown) */
  say: string;
  /** the command as the page shows it */
  show: string;
  /** what runs: the program and its arguments */
  argv: string[];
  /** stdout goes to this file of the work directory instead of the page (`> plan.yaml`) */
  stdoutTo?: string;
  /** the exit code the page expects: a different one stops the walkthrough */
  code: number;
  /** the output's last line is the kubeconfig: the next commands get it as KUBECONFIG */
  kubeconfig?: boolean;
  /** a file written to the work directory before the command runs, shown on the page above it */
  writes?: { path: string; text: string };
}

/** A webhook that calls the cluster DNS Service by its ClusterIP (never in the way: failurePolicy Ignore, no namespace matches). */
const WEBHOOK = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: audit-hook
webhooks:
  - name: audit.example.com
    clientConfig:
      url: https://10.96.0.10:443/validate
    failurePolicy: Ignore
    sideEffects: None
    admissionReviewVersions: [v1]
    namespaceSelector:
      matchLabels:
        audit-hook: never
    rules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE]
        resources: [configmaps]
`;

/** The first address of an IPv4 /16 or larger block: default/kubernetes's address in that range. */
const firstOf = (cidr: string): string => cidr.replace(/\.0\/\d+$/, '.1');
// the CLI from the sources (what the single-file executable runs), so that the page follows them without a build
const cli = (...args: string[]): string[] => [process.execPath, join(ROOT, 'scripts', 'dist-entry.ts'), ...args];
const testbed = (...args: string[]): string[] => [process.execPath, join(ROOT, 'test', 'testbed', 'cli.ts'), ...args];


function steps(): Array<Step | string> {
  return [
    `## 1. A cluster to practise on

The testbed is a real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler) with
kwok nodes, built from Go modules on first use (\`npm run testbed -- build\`, see [testbed.md](testbed.md)).
Start one with the Service range ${OLD} and two nodes, and put a few Deployments and Services in it:`,
    { say: '', show: `npm run testbed -- up --service-cidr ${OLD} --pod-cidr 10.244.0.0/20 --nodes 2`, argv: testbed('up', '--service-cidr', OLD, '--pod-cidr', '10.244.0.0/20', '--nodes', '2'), code: 0, kubeconfig: true },
    { say: 'The last line is the kubeconfig; every command below reads it through `KUBECONFIG`, as kubectl does:', show: 'export KUBECONFIG=KUBECONFIG', argv: [], code: 0 },
    { say: '`--fixed-addresses` gives the Services fixed ClusterIPs instead of random ones, so that this page is the same on every run:', show: 'npm run testbed -- populate --namespaces 2 --deployments 1 --replicas 1 --services 2 --fixed-addresses', argv: testbed('populate', '--namespaces', '2', '--deployments', '1', '--replicas', '1', '--services', '2', '--fixed-addresses'), code: 0 },
    { say: 'Clusters keep old addresses in places a move does not change by itself. Here, a webhook that some tool registered with the cluster DNS Service\'s ClusterIP in its URL:', show: 'kubectl apply -f audit-hook.yaml', argv: ['kubectl', 'apply', '-f', 'audit-hook.yaml'], code: 0, writes: { path: 'audit-hook.yaml', text: WEBHOOK } },
    `## 2. Look before you move

\`inspect\` reads the cluster (it changes nothing) and shows its ranges, where each was found, conflicts and
capacity:`,
    { say: '', show: 'kube-renumber inspect', argv: cli('inspect'), code: 0 },
    { say: '`suggest` finds a free range that holds today\'s Services with headroom (twice as many by default), clear of the cluster\'s own ranges and of the well-known ones (Tailscale\'s 100.64.0.0/10, Docker, cloud VPC defaults):', show: 'kube-renumber suggest --for services', argv: cli('suggest', '--for', 'services'), code: 0 },
    { say: 'Moving both ranges, ask for the pair: two disjoint ranges inside one aligned range, the envelope, that a firewall rule, a route or a mesh setting can name (on kOps it is the new `nonMasqueradeCIDR`):', show: 'kube-renumber suggest --for services,pods', argv: cli('suggest', '--for', 'services,pods'), code: 0 },
    `## 3. The plan

A plan is a document: read it, review it like any change, then apply it. Without \`-o\` it prints a summary;
\`-o yaml\` is what \`apply\` runs (\`-o markdown\` for a change request, \`-o html\` for a page with the address map):`,
    { say: '', show: `kube-renumber plan --service-cidr ${NEW}`, argv: cli('plan', '--service-cidr', NEW), code: 1 },
    { say: `One pre-flight check fails (exit 1): \`plan\` read the API server's serving certificate over TLS, and it does not
carry ${firstOf(NEW)}, the address \`default/kubernetes\` moves to; pods that verify it there would fail. On a real
cluster, reissue the certificate as the check's fix says, then plan again. The testbed's clients do not verify
it (its kwok pods run no code), so here the plan is told which addresses the certificate is taken to carry:`,
    show: `kube-renumber plan --service-cidr ${NEW} --apiserver-cert-san ${firstOf(OLD)} --apiserver-cert-san ${firstOf(NEW)} -o yaml > plan.yaml`,
    argv: cli('plan', '--service-cidr', NEW, '--apiserver-cert-san', firstOf(OLD), '--apiserver-cert-san', firstOf(NEW), '-o', 'yaml'), stdoutTo: 'plan.yaml', code: 0 },
    `## 4. Apply, gate by gate

\`apply\` runs the steps in order; each one checks the live state, backs up what it changes, applies, verifies
and writes a journal line. Where a person (or a pipeline) has to act outside the API, it stops at a **gate**
with exit 7 and says what to do. \`--yes\` only answers the plan's confirmation steps (before the pod restarts,
between tiers, before the DNS Service): without it, each of them asks \`proceed? [y/N]\` on a terminal, and
elsewhere stops the run there (exit 7) until \`resume --yes\`.`,
    { say: '', show: 'kube-renumber apply plan.yaml --yes', argv: cli('apply', 'plan.yaml', '--yes'), code: 7 },
    { say: 'The first gate holds the run before any change: the webhook still calls the DNS Service at its old address, which the move takes away. Point it at the Service by name (or, if nothing uses it, delete it); the gate reads the cluster again and passes once nothing of the kind is left:', show: 'kubectl delete validatingwebhookconfiguration audit-hook', argv: ['kubectl', 'delete', 'validatingwebhookconfiguration', 'audit-hook'], code: 0 },
    { say: '', show: 'kube-renumber resume plan.yaml --yes', argv: cli('resume', 'plan.yaml', '--yes'), code: 7 },
    { say: 'Every Service has moved; the API server still allocates from the old range. On a real cluster you change `--service-cluster-ip-range` in its manifest (kubeadm, kOps: the plan shows the patch); on the testbed:', show: `npm run testbed -- restart-apiserver --service-cidr ${NEW}`, argv: testbed('restart-apiserver', '--service-cidr', NEW), code: 0 },
    { say: '`resume` goes on from the journal. The gate is checked against the cluster, so nothing needs acknowledging:', show: 'kube-renumber resume plan.yaml --yes', argv: cli('resume', 'plan.yaml', '--yes'), code: 7 },
    { say: 'The kubelets\' `clusterDNS` lives in each node\'s kubelet configuration, which the API cannot show; once it names the new DNS address, acknowledge the gate (the testbed\'s kwok nodes have no kubelet configuration). Pods keep the environment variables and the resolver they started with until they restart: the run then restarts every workload itself (waves of `--parallel`, PodDisruptionBudgets respected through the Eviction API, the cluster DNS first) and finishes:', show: 'kube-renumber resume plan.yaml --yes --ack-gate kubelet-cluster-dns', argv: cli('resume', 'plan.yaml', '--yes', '--ack-gate', 'kubelet-cluster-dns'), code: 0 },
    `## 5. Verify

\`verify\` checks the end state against the plan and the backups (exit 6 if anything is off); \`status\` reads the
journal:`,
    { say: '', show: 'kube-renumber verify plan.yaml', argv: cli('verify', 'plan.yaml'), code: 0 },
    { say: '', show: 'kube-renumber status plan.yaml', argv: cli('status', 'plan.yaml'), code: 0 },
    `## 6. Rolling back a second run

A second move, to ${SECOND}, stopped at its first gate, then undone: \`rollback\` puts every Service back at the IP
its backup holds and removes what the run created, in reverse order.`,
    { say: '', show: `kube-renumber plan --service-cidr ${SECOND} --apiserver-cert-san ${firstOf(NEW)} --apiserver-cert-san ${firstOf(SECOND)} -o yaml > plan-2.yaml`,
      argv: cli('plan', '--service-cidr', SECOND, '--apiserver-cert-san', firstOf(NEW), '--apiserver-cert-san', firstOf(SECOND), '-o', 'yaml'), stdoutTo: 'plan-2.yaml', code: 0 },
    { say: '', show: 'kube-renumber apply plan-2.yaml --yes', argv: cli('apply', 'plan-2.yaml', '--yes'), code: 7 },
    { say: '', show: 'kube-renumber rollback plan-2.yaml', argv: cli('rollback', 'plan-2.yaml'), code: 0 },
    { say: 'Rolled back is not the plan\'s end state, and `verify` says so:', show: 'kube-renumber verify plan-2.yaml', argv: cli('verify', 'plan-2.yaml'), code: 6 },
    `## 7. Done

\`\`\`sh
npm run testbed -- down
\`\`\`

On a real cluster the same five commands do the work: \`inspect\`, \`suggest\`, \`plan\`, \`apply\` (and \`resume\` at each
gate), \`verify\`. Before the first one read [Permissions](reference.md#permissions) and
[State, backups, locks](reference.md#state-backups-locks); for many clusters, [fleet.md](fleet.md).`,
  ];
}

/** Fixed stand-ins for what differs between runs. */
export function normalise(text: string, work: string): string {
  return text
    .replace(/\x1b\[[0-9;]*m/g, '')
    .replaceAll(work, '/tmp')
    .replace(new RegExp(`\\b${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'g'), 'HOST')
    .replace(/\/tmp\/kube-renumber-testbed\/[A-Za-z0-9._-]*?-?[0-9a-f]{6,}\b/g, '/tmp/kube-renumber-testbed/RUN')
    .replace(/(127\.0\.0\.1|localhost):\d{2,5}/g, '$1:PORT')
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)/g, '2026-01-01T00:00:00Z')
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, '00000000-0000-0000-0000-000000000000')
    .replace(/\b(plan|id|run)( |: |=)[0-9a-f]{12}\b/g, '$1$2PLANID')
    .replace(/\/kube-renumber\/[0-9a-f]{12}\b/g, '/kube-renumber/PLANID')
    .replace(/\bpid \d+/g, 'pid PID')
    .replace(/\/\d+-[0-9a-f]{6,}\b/g, '/PID-RANDOM')
    .replace(/\b\d+(?:\.\d+)?(ms|s|m)\b(?!\/)/g, (m, unit: string) => `N${unit}`)
    .replace(/\b\d+ (ms|seconds?|minutes?)\b/g, 'N $1')
    .replace(/\b(\d+h)?(\d+m)?\d+s ago\b/g, 'Ns ago')
    .replace(/[ \t]+$/gm, '')
    // a wait's progress lines (waiting, still waiting, done after) and the restarts' progress lines (rollouts in
    // flight, workloads restarted so far) come or not, and in which order, with the machine's speed
    .split('\n').filter((l) => !/^\[\d+\/\d+\] [\w-]+: (?:(?:still )?waiting for .*|.*: done after N\w+|rollouts in flight \d+: .*|workloads restarted \d+\/\d+)$/.test(l)).join('\n');
}

export interface Result { page: string; ms: number }

export function generate(log: (s: string) => void = () => {}): Result {
  const t0 = Date.now();
  const work = mkdtempSync(join(tmpdir(), 'kr-walk-'));
  const kubectl = join(binDir(), 'kubectl');
  if (!existsSync(kubectl)) throw new Error(`${kubectl} is missing: build the testbed first (npm run testbed -- build)`);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    XDG_RUNTIME_DIR: work,
    XDG_STATE_HOME: join(work, 'state'),
    PATH: [binDir(), process.env.PATH ?? ''].join(delimiter),
    NO_COLOR: '1',
    COLUMNS: '120',
  };
  delete env.KUBE_RENUMBER_TESTBED_VERBOSE;
  env.KUBECONFIG = join(work, 'no-cluster-yet');
  const out: string[] = [HEADER];
  try {
    for (const s of steps()) {
      if (typeof s === 'string') { out.push(s, ''); continue; }
      if (s.say) out.push(s.say, '');
      if (s.argv.length === 0) { out.push('```sh', `$ ${s.show.replace('KUBECONFIG=KUBECONFIG', `KUBECONFIG=${normalise(env.KUBECONFIG ?? '', work)}`)}`, '```', ''); continue; }
      if (s.writes) {
        writeFileSync(join(work, s.writes.path), s.writes.text);
        out.push(`\`${s.writes.path}\`:`, '', '```yaml', s.writes.text.replace(/\n$/, ''), '```', '');
      }
      log(`$ ${s.show}`);
      const file = join(work, '.out');
      const fd = openSync(file, 'w');
      const stdout = s.stdoutTo ? openSync(join(work, s.stdoutTo), 'w') : fd;
      const r = spawnSync(s.argv[0]!, s.argv.slice(1), { cwd: work, env, stdio: ['ignore', stdout, fd], timeout: 10 * 60_000 });
      closeSync(fd);
      if (stdout !== fd) closeSync(stdout);
      const text = readFileSync(file, 'utf8');
      if (r.status !== s.code) throw new Error(`${s.show}: exit ${r.status ?? r.signal}, the page expects ${s.code}:\n${text.slice(-3000)}`);
      if (s.kubeconfig) env.KUBECONFIG = text.trim().split('\n').at(-1)!;
      const shown = normalise(text, work).replace(/\n+$/, '');
      out.push('```console', `$ ${s.show}`, ...(shown ? [shown] : []), ...(s.code !== 0 ? [`(exit ${s.code})`] : []), '```', '');
    }
  } finally {
    spawnSync(process.execPath, [join(ROOT, 'test', 'testbed', 'cli.ts'), 'down'], { cwd: work, env, stdio: 'ignore', timeout: 120_000 });
    rmSync(work, { recursive: true, force: true });
  }
  return { page: `${out.join('\n').replace(/\n+$/, '')}\n`, ms: Date.now() - t0 };
}

const HEADER = `# Walkthrough: a first migration

A Service CIDR move on the local testbed, from an empty machine to a verified cluster, then a second move rolled
back. Every command below was run, and what it printed is shown under it (generated by \`npm run walkthrough\`,
scripts/walkthrough.ts; \`test/integration/walkthrough.test.ts\` fails when the page and a new run differ). What
changes from run to run is replaced by stand-ins: ports (\`PORT\`), durations (\`Ns\`, \`Nms\`), times, uids,
plan ids (\`PLANID\`) and process ids; the progress lines of waits (\`waiting for …\`, \`… done after 1.2s\`) and of
the workload restarts (\`rollouts in flight …\`, \`workloads restarted 2/6\`), which come or not with the machine's
speed, are left out.

\`kube-renumber\` is \`npx kube-renumber\` in a checkout, or \`kubectl renumber\` once installed (README, Install).
`;

/** The first lines where two pages differ, for the check's message. */
export function firstDifference(a: string, b: string): string {
  const x = a.split('\n');
  const y = b.split('\n');
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if (x[i] !== y[i]) return `line ${i + 1}:\n- ${x[i] ?? '(end of page)'}\n+ ${y[i] ?? '(end of page)'}`;
  }
  return '';
}

function main(argv: string[]): void {
  const check = argv.includes('--check');
  const unknown = argv.filter((a) => a !== '--check');
  if (unknown.length) {
    process.stderr.write(`error: unknown argument ${unknown[0]}\nusage: node scripts/walkthrough.ts [--check]\n`);
    process.exit(2);
  }
  const { page, ms } = generate((s) => process.stderr.write(`walkthrough: ${s}\n`));
  if (check) {
    const old = existsSync(PAGE) ? readFileSync(PAGE, 'utf8') : '';
    if (old !== page) {
      process.stderr.write(`error: docs/walkthrough.md differs from a new run (npm run walkthrough writes it): ${firstDifference(old, page)}\n`);
      process.exit(1);
    }
    process.stderr.write(`walkthrough: docs/walkthrough.md is up to date (${ms} ms)\n`);
    return;
  }
  writeFileSync(PAGE, page);
  process.stderr.write(`walkthrough: wrote docs/walkthrough.md (${ms} ms)\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`error: walkthrough: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
}
