/**
 * The shipped RBAC files (deploy/rbac*.yaml) as declarations: the read role, what every run and a Service CIDR
 * move write, the probe's role, and the part of the Pod CIDR file every pod path shares; the platforms' reads come
 * from ./rbac-platforms.ts and each pod path adds its own (PathRbac, src/pod-paths/<id>/rbac.ts). rbacFiles puts
 * them together; scripts/rbac.ts writes them. `create pods` is in none of them: a run creates bare pods again only
 * in the namespaces its plan lists, by the Role `kube-renumber rbac PLAN` writes there (./recreate-grants.ts). Pure.
 */
import { HELM_RELEASES_RBAC_FILE, KUBELET_CONFIGZ_RBAC_FILE, POD_RBAC_FILE } from './access-need.ts';
import { binding, role, type PathRbac, type RbacDoc, type RbacFile, type RbacRule } from './rbac-manifest.ts';
import { PLATFORM_READ_RULES } from './rbac-platforms.ts';
import { referenceLists } from '../cluster/references/registry.ts';

const R = (apiGroups: string[], resources: string[], verbs: string[], more: Pick<RbacRule, 'comment' | 'resourceNames'> = {}): RbacRule => ({
  ...(more.comment ? { comment: more.comment } : {}), apiGroups, resources, ...(more.resourceNames ? { resourceNames: more.resourceNames } : {}), verbs,
});
const GL = ['get', 'list'];
const serviceAccount = (name: string): RbacDoc => ({ object: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: 'kube-system' } } });

/**
 * What the references scan's sources list (src/cluster/references/registry.ts), one rule per API group in the
 * registry's order: ConfigMaps cluster-wide (those of kube-system by the Role below as well), workloads' pod
 * templates (command, args, env values and hostAliases are all that is kept), EndpointSlices, webhook
 * configurations, Calico's BGPConfiguration.
 */
function referenceReadRules(): RbacRule[] {
  const byGroup = new Map<string, string[]>();
  for (const l of referenceLists()) byGroup.set(l.group, [...(byGroup.get(l.group) ?? []), l.plural]);
  return [...byGroup].map(([group, plurals], i) => R([group], plurals, GL, i === 0 ? {
    comment: ['Read to find what still names an old range or ClusterIP (src/cluster/references/): ConfigMaps in every namespace,',
      'the pod templates of Deployments, StatefulSets and DaemonSets, EndpointSlices, admission webhook configurations,',
      'Calico BGPConfigurations. Secrets are not read (Helm\'s release Secrets: the opt-in deploy/rbac-helm-releases.yaml).'],
  } : {}));
}

function readFile(): RbacFile {
  return {
    path: 'deploy/rbac.yaml',
    header: [
      'Least-privilege access for kube-renumber\'s read-only commands (inspect, suggest, plan).',
      'Bind the ClusterRole and the kube-system Role to the user, group or ServiceAccount that runs it:',
      '  kubectl apply -f deploy/rbac.yaml',
      'then, for a person: kubectl create clusterrolebinding ... --clusterrole=kube-renumber-read --user=NAME',
      '(and the matching rolebinding in kube-system), or run as the ServiceAccount below.',
      'Written by `npm run rbac` from src/plan/rbac-core.ts and src/plan/rbac-platforms.ts; edit those, not this file.',
    ],
    docs: [
      serviceAccount('kube-renumber'),
      {
        object: role('kube-renumber-read', [
          R([''], ['nodes', 'services', 'pods'], GL),
          R([''], ['namespaces'], ['get'], { comment: ['The cluster\'s identity: the kube-system namespace\'s uid, which plans record and apply compares.'], resourceNames: ['kube-system'] }),
          R(['networking.k8s.io'], ['servicecidrs', 'ipaddresses'], GL),
          R(['networking.k8s.io'], ['networkpolicies', 'ingresses'], GL, { comment: ['Policies and Ingress allow-list annotations, read to find what still names an old range.'] }),
          R(['crd.projectcalico.org'], ['ippools', 'ipamblocks', 'blockaffinities'], GL),
          R(['crd.projectcalico.org'], ['networkpolicies', 'globalnetworkpolicies', 'networksets', 'globalnetworksets'], GL),
          R(['operator.tigera.io'], ['installations'], GL),
          R(['cilium.io'], ['ciliumpodippools'], GL, { comment: ['Cilium multi-pool IPAM: the pools pods take their addresses from.'] }),
          ...referenceReadRules(),
          ...PLATFORM_READ_RULES,
          R(['cluster.x-k8s.io'], ['machinedeployments', 'machinesets', 'machinepools'], GL, {
            comment: ['The most nodes the cluster may reach, read to size new pod ranges: Cluster API\'s max-size annotations on its', 'machine groups, Karpenter NodePools\' limits (src/cluster/node-limits.ts).'],
          }),
          R(['karpenter.sh'], ['nodepools'], GL),
        ]),
      },
      { object: binding('kube-renumber-read', 'ClusterRole', 'kube-renumber-read', 'kube-renumber') },
      {
        comment: ['ConfigMaps of kube-system (kubeadm-config, kubelet-config, kube-proxy, calico-config); the ClusterRole reads those of', 'the other namespaces for the references scan.'],
        object: role('kube-renumber-read-config', [R([''], ['configmaps'], GL)], 'kube-system'),
      },
      { object: binding('kube-renumber-read-config', 'Role', 'kube-renumber-read-config', 'kube-renumber', 'kube-system') },
    ],
  };
}

function migrateFile(): RbacFile {
  return {
    path: 'deploy/rbac-migrate.yaml',
    header: [
      'Least privilege for the commands that change the cluster (apply, resume, rollback, restore, verify) of a',
      'Service CIDR migration, and for every run: its Lease and its state kept in the cluster. Apply deploy/rbac.yaml first (it defines kube-renumber-read); this file adds the',
      'ServiceAccount kube-renumber-migrate with the read roles plus what a migration writes:',
      '  kubectl apply -f deploy/rbac.yaml -f deploy/rbac-migrate.yaml',
      'Written by `npm run rbac` from src/plan/rbac-core.ts; edit that, not this file.',
    ],
    docs: [
      serviceAccount('kube-renumber-migrate'),
      { object: binding('kube-renumber-migrate-read', 'ClusterRole', 'kube-renumber-read', 'kube-renumber-migrate') },
      { object: binding('kube-renumber-migrate-read-config', 'Role', 'kube-renumber-read-config', 'kube-renumber-migrate', 'kube-system') },
      {
        comment: [
          'What apply / resume / rollback / restore / verify need on top of kube-renumber-read, for a Service CIDR',
          'migration: move Services (patch; recreate: delete and create), create and delete bridge and cover Services',
          '(and set the covers\' load-balancer status), their',
          'EndpointSlices and ServiceCIDRs, read IPAddresses and the apiserver\'s events, and hold the run\'s Lease.',
          'Step restart-workloads (plan --restart-workloads=tool, the default): patch the pod template\'s restartedAt of',
          'Deployments, StatefulSets and DaemonSets (rollout restart) and the replicas of the cluster DNS and --critical',
          'Deployments; evict Job and bare pods through the Eviction API (PodDisruptionBudgets, Jobs and ReplicaSets read);',
          'patch the labels of pods serving a UDP Service (CoreDNS) to hand them over: out of their ReplicaSet, then out of',
          'their Services, evicted once every kube-proxy has dropped them;',
          'bare pods are created again from their backup only in the namespaces the plan lists',
          '(spec.serviceCIDR.restarts.barePodNamespaces), by the Role and RoleBinding `kube-renumber rbac PLAN` writes in each.',
        ],
        object: role('kube-renumber-migrate', [
          R([''], ['services'], ['get', 'list', 'create', 'patch', 'delete']),
          R([''], ['services/status'], ['patch'], { comment: ['in-place moves: the load-balancer status of kube-renumber\'s own cover Services (src/engine/covers.ts), node-port',
            'covers (plan --nodeport-cover) included'] }),
          R([''], ['pods'], ['get', 'list', 'patch']),
          R([''], ['pods/eviction'], ['create']),
          R(['apps'], ['deployments', 'statefulsets', 'daemonsets'], ['get', 'list', 'patch']),
          R(['apps'], ['replicasets'], GL),
          R(['batch'], ['jobs'], GL),
          R(['policy'], ['poddisruptionbudgets'], GL),
          R([''], ['events'], ['list']),
          R(['discovery.k8s.io'], ['endpointslices'], ['get', 'list', 'watch', 'create', 'delete']),
          R(['networking.k8s.io'], ['servicecidrs'], ['get', 'list', 'create', 'delete']),
          R(['networking.k8s.io'], ['ipaddresses'], GL),
        ]),
      },
      {
        object: role('kube-renumber-lock', [
          R(['coordination.k8s.io'], ['leases'], ['create'], {
            comment: ['create cannot be limited to a name (the object does not exist yet); everything else only on the run\'s Lease,', 'never on the controller-manager\'s or the scheduler\'s leader Leases beside it'],
          }),
          R(['coordination.k8s.io'], ['leases'], ['get', 'update', 'delete'], { resourceNames: ['kube-renumber'] }),
        ], 'kube-system'),
      },
      { object: binding('kube-renumber-migrate', 'ClusterRole', 'kube-renumber-migrate', 'kube-renumber-migrate') },
      { object: binding('kube-renumber-lock', 'Role', 'kube-renumber-lock', 'kube-renumber-migrate', 'kube-system') },
      {
        comment: [
          'The run\'s state kept in the cluster as well as in the state directory (journal and backups, gzip chunks in',
          'Secrets labelled kube-renumber.io/state-of=<plan id>), so a run can be resumed, rolled back or restored from',
          'another machine. Secrets, not ConfigMaps: backups hold Pods, pod templates and Nodes, whose env values and',
          'annotations may carry credentials. Only in this namespace, which holds nothing else. deletecollection, not delete:',
          'a compaction drops the chunks a newer whole copy replaced in one request.',
        ],
        object: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kube-renumber', labels: { 'app.kubernetes.io/managed-by': 'kube-renumber' } } },
      },
      { object: role('kube-renumber-state', [R([''], ['secrets'], ['get', 'list', 'create', 'deletecollection'])], 'kube-renumber') },
      { object: binding('kube-renumber-state', 'Role', 'kube-renumber-state', 'kube-renumber-migrate', 'kube-renumber') },
    ],
  };
}

/** The Pod CIDR file: what every pod path does (evictions, restarts, cordons), then each path's own in `paths`' order. */
function migratePodsFile(paths: readonly PathRbac[]): RbacFile {
  return {
    path: POD_RBAC_FILE,
    header: [
      'Least privilege for a Pod CIDR migration, on top of deploy/rbac.yaml and deploy/rbac-migrate.yaml (same',
      'ServiceAccount kube-renumber-migrate). Only needed when the plan has spec.podCIDR:',
      '  kubectl apply -f deploy/rbac.yaml -f deploy/rbac-migrate.yaml -f deploy/rbac-migrate-pods.yaml',
      'Written by `npm run rbac` from what every pod path shares (src/plan/rbac-core.ts) and what each declares',
      '(src/pod-paths/<id>/rbac.ts); edit those, not this file. What it writes and why:',
      '  pods: evict (Eviction API, PodDisruptionBudgets respected), delete pods left on a deleted node or',
      '        started before their node had its podCIDR; patch the labels of pods serving a UDP Service (CoreDNS)',
      '        to hand them over (out of their ReplicaSet, then their Services, evicted once kube-proxy dropped them);',
      '  pods create: nowhere in this file. Bare pods (no controller) are created again from their backup only in',
      '        the namespaces the plan lists (spec.podCIDR.barePodNamespaces), by a Role kube-renumber-recreate-pods and',
      '        its RoleBinding in each of them, which `kube-renumber rbac PLAN | kubectl apply -f -` makes (the confirm',
      '        step confirm-pod-disruption and an apply without them print the same as kubectl commands).',
      '        Cluster-wide pods create would let the account run a pod as any ServiceAccount and mount any Secret',
      '        of any namespace; per namespace it can do that only where the plan\'s bare pods already run.',
      '  deployments/statefulsets/daemonsets: patch the pod template\'s restartedAt (rollout restart) and the',
      '        replicas of the critical Deployments scaled up before the restarts;',
      '  nodes: cordon/uncordon;',
      ...paths.flatMap((p) => p.why.map((l) => `  ${l}`)),
      'No Secrets, no nodes/proxy, no exec.',
    ],
    docs: [
      {
        object: role('kube-renumber-migrate-pods', [
          R([''], ['pods'], ['get', 'list', 'patch', 'delete']),
          R([''], ['pods/eviction'], ['create']),
          R([''], ['nodes'], ['get', 'list', 'patch']),
          R(['apps'], ['deployments', 'statefulsets', 'daemonsets'], ['get', 'list', 'patch']),
          R(['apps'], ['replicasets'], GL),
          R(['batch'], ['jobs'], GL),
          R(['policy'], ['poddisruptionbudgets'], GL),
          ...paths.flatMap((p) => p.rules),
        ]),
      },
      { object: binding('kube-renumber-migrate-pods', 'ClusterRole', 'kube-renumber-migrate-pods', 'kube-renumber-migrate') },
      ...paths.flatMap((p) => p.docs ?? []),
    ],
  };
}

function probeFile(): RbacFile {
  return {
    path: 'deploy/rbac-probe.yaml',
    header: [
      'Least privilege for `kube-renumber probe --deploy` in the namespace "default" (for another namespace, change the',
      'two `namespace: default` below, or bind the Role in each namespace you probe from):',
      '  kubectl apply -f deploy/rbac-probe.yaml',
      'then run as the ServiceAccount below, or bind a person:',
      '  kubectl -n default create rolebinding kube-renumber-probe-NAME --role=kube-renumber-probe --user=NAME',
      'What it allows and why:',
      '  configmaps  create, delete: the ConfigMap holding the probe program (kube-renumber-probe-<run id>);',
      '  deployments create, delete: the Deployment running it (its ReplicaSet and pods go with it);',
      '  pods        get, list: find the probe pods (by label) and see whether they run;',
      '  pods/log    get: read each probe pod\'s reports from its log.',
      'No update or patch of anything, no Secrets, no exec, no cluster-wide access. The probe pods themselves get no',
      'ServiceAccount token (automountServiceAccountToken: false) and need no permissions.',
      'Written by `npm run rbac` from src/plan/rbac-core.ts; edit that, not this file.',
    ],
    docs: [
      serviceAccount('kube-renumber-probe'),
      {
        object: role('kube-renumber-probe', [
          R([''], ['configmaps'], ['create', 'delete']),
          R(['apps'], ['deployments'], ['create', 'delete']),
          R([''], ['pods'], GL),
          R([''], ['pods/log'], ['get']),
        ], 'default'),
      },
      { object: binding('kube-renumber-probe', 'Role', 'kube-renumber-probe', 'kube-renumber-probe', 'default') },
    ],
  };
}

/**
 * The opt-in file of --read-kubelet-config: get nodes/proxy, which is far wider than reading a configuration, so
 * it is in none of the default roles nor in deploy/kustomization.yaml (test/unit/rbac.test.ts checks both).
 */
function kubeletConfigzFile(): RbacFile {
  return {
    path: KUBELET_CONFIGZ_RBAC_FILE,
    header: [
      'OPT-IN, NOT PART OF THE DEFAULT ROLES (not in kustomization.yaml): get on nodes/proxy for',
      '`kube-renumber apply|resume --read-kubelet-config`, with which gate kubelet-cluster-dns reads each Ready',
      'node\'s kubelet configuration (GET /api/v1/nodes/NODE/proxy/configz) instead of waiting for',
      '--ack-gate kubelet-cluster-dns.',
      '',
      'READ THIS BEFORE APPLYING IT. nodes/proxy is not a read-only permission, whatever its verb:',
      '  - the API server proxies the request to the kubelet with its own credentials, so whoever holds it can',
      '    call every kubelet endpoint that has no finer subresource, on every node: container logs, the pods\'',
      '    specs, and /exec, /attach, /run, /portForward: commands in any container of the node;',
      '  - a WebSocket upgrade is an HTTP GET, which the kubelet authorizes as verb get, so `get nodes/proxy`',
      '    alone is enough to run commands in any container (kubernetes/kubernetes#136550; the Kubernetes docs\'',
      '    warning "get nodes/proxy", kubelet-authn-authz), and these requests bypass admission and the API',
      '    server\'s audit of pods/exec.',
      'A token holding it is as strong as exec into every pod of the cluster. See docs/service-migration.md,',
      '"Reading the kubelets\' configuration", for the sources and the alternatives (--ack-gate; kubeadm\'s',
      'kubelet-config ConfigMap; nodes/configz, which serves the same data without exec but only to clients that',
      'reach the kubelet\'s port themselves).',
      '',
      'Bind it only for the run that reaches gate kubelet-cluster-dns, and delete the binding afterwards:',
      '  kubectl apply -f deploy/rbac-kubelet-configz.yaml',
      '  kube-renumber resume plan.yaml --read-kubelet-config',
      '  kubectl delete clusterrolebinding kube-renumber-kubelet-configz',
      'Written by `npm run rbac` from src/plan/rbac-core.ts; edit that, not this file.',
    ],
    docs: [
      {
        object: role('kube-renumber-kubelet-configz', [
          R([''], ['nodes/proxy'], ['get'], { comment: ['get only: the run sends GET .../proxy/configz and nothing else through it'] }),
        ]),
      },
      { object: binding('kube-renumber-kubelet-configz', 'ClusterRole', 'kube-renumber-kubelet-configz', 'kube-renumber-migrate') },
    ],
  };
}

/**
 * The opt-in file of --read-helm-releases: list secrets in every namespace, which reads every Secret's data, so it
 * is in none of the default roles nor in deploy/kustomization.yaml (test/unit/rbac.test.ts checks both).
 */
function helmReleasesFile(): RbacFile {
  return {
    path: HELM_RELEASES_RBAC_FILE,
    header: [
      'OPT-IN, NOT PART OF THE DEFAULT ROLES (not in kustomization.yaml): list on secrets in every namespace for',
      '`kube-renumber plan --read-helm-releases`, with which the references scan reads Helm\'s release Secrets',
      '(type helm.sh/release.v1, labels owner=helm,status=deployed) and finds a release whose chart or values pin a',
      'Service\'s clusterIP (the next helm upgrade would put the old address back). A plan read so checks them again',
      'at its gate references, so the run\'s ServiceAccount needs it as well.',
      '',
      'READ THIS BEFORE APPLYING IT. RBAC cannot grant Secrets by type or label: whoever holds list secrets can read',
      'the data of every Secret of every namespace (tokens, passwords, TLS keys), whatever selector it sends.',
      'kube-renumber sends the type and label selectors, keeps only the pinned addresses of each release and drops',
      'the rest as it reads, and never prints or stores Secret data; the permission itself allows more.',
      'Without it: leave out --read-helm-releases (the plan says the releases were not read), or plan offline with',
      'the release Secrets among the files:',
      '  kubectl get secrets -A --field-selector type=helm.sh/release.v1 -l owner=helm,status=deployed -o yaml',
      '',
      'Bind it only for the plan and the run that reads the releases, and delete the binding afterwards:',
      '  kubectl apply -f deploy/rbac-helm-releases.yaml',
      '  kube-renumber plan --read-helm-releases ... -o yaml > plan.yaml',
      '  kube-renumber apply plan.yaml',
      '  kubectl delete clusterrolebinding kube-renumber-helm-releases',
      'Written by `npm run rbac` from src/plan/rbac-core.ts; edit that, not this file.',
    ],
    docs: [
      {
        object: role('kube-renumber-helm-releases', [
          R([''], ['secrets'], ['list'], { comment: ['list only (no get, no watch): one paginated LIST with fieldSelector type=helm.sh/release.v1'] }),
        ]),
      },
      {
        comment: ['Both ServiceAccounts: kube-renumber reads for plan, kube-renumber-migrate for the gate of apply and resume.'],
        object: { ...binding('kube-renumber-helm-releases', 'ClusterRole', 'kube-renumber-helm-releases', 'kube-renumber'),
          subjects: ['kube-renumber', 'kube-renumber-migrate'].map((name) => ({ kind: 'ServiceAccount', name, namespace: 'kube-system' })) },
      },
    ],
  };
}

/** Every shipped RBAC file, given what each pod path declares (in the registry's order). */
export function rbacFiles(paths: readonly PathRbac[]): RbacFile[] {
  return [readFile(), migrateFile(), migratePodsFile(paths), probeFile(), kubeletConfigzFile(), helmReleasesFile()];
}
