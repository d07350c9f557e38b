// Package kubeclient connects soakd to a Kubernetes cluster: the
// kubeconfig rules kubectl follows, or the in-cluster service account.
package kubeclient

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Connect loads the client configuration of the cluster kubeconfig and
// context name (kubeconfig empty: $KUBECONFIG or ~/.kube/config, else the
// in-cluster service account; context empty: the file's current one) and
// returns it with a clientset on it. what prefixes the errors (the config
// section that names the cluster).
func Connect(kubeconfig, context, what string) (*rest.Config, kubernetes.Interface, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: cannot load the cluster's client config (kubeconfig %q, context %q): %w", what, kubeconfig, context, err)
	}
	cfg.UserAgent = "soakd"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	return cfg, cs, nil
}
