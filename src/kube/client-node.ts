/**
 * The part of @kubernetes/client-node that src/kube uses. The single-file build (`npm run dist`) loads the package
 * through this module (see clientNode() in kubeconfig.ts), so the bundler keeps only what KubeConfig needs: the
 * whole bundle is 3.9 MB, against 19 MB with every generated API model. Run from dist/ or the sources, the package
 * is loaded whole, on first use.
 */
export { KubeConfig } from '@kubernetes/client-node';
