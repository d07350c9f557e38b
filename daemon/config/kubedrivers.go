package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Driver backends (Profile.Drivers.Backend).
const (
	// BackendLocal runs drivers as child processes of soakd (the default).
	BackendLocal = "local"
	// BackendKubernetes runs them as the pods of an Indexed Job.
	BackendKubernetes = "kubernetes"
)

// KubernetesDriversConfig is where and how the Kubernetes driver backend
// (a profile's drivers.backend: kubernetes) runs its drivers: one
// ConfigMap and one Indexed Job per phase (docs/kubernetes.md).
type KubernetesDriversConfig struct {
	// Kubeconfig is the kubeconfig file soakd talks to the cluster with;
	// empty: $KUBECONFIG or ~/.kube/config, else the in-cluster service
	// account (soakd running in a pod).
	Kubeconfig string `yaml:"kubeconfig"`
	// Context is the kubeconfig context; empty: its current one.
	Context string `yaml:"context"`
	// Namespace is where the Job, its ConfigMap and pods are created.
	Namespace string `yaml:"namespace"`
	// Image is the soakd image the driver pods run (the same build as
	// this soakd: the drivers' messages are versioned).
	Image string `yaml:"image"`
	// ImagePullPolicy is the pods' Always, IfNotPresent or Never.
	ImagePullPolicy string `yaml:"image_pull_policy"`
	// ServiceAccount is the pods' account: they need no API access.
	ServiceAccount string `yaml:"service_account"`
	// ReadyTimeout is how long after the Job is created every pod must
	// be running and ready: the phase's common start instant is then.
	ReadyTimeout time.Duration `yaml:"ready_timeout"`
	// TTL is the Job's ttlSecondsAfterFinished, should soakd die before
	// it deletes the Job itself.
	TTL time.Duration `yaml:"ttl"`
	// CPU and Memory are each pod's requests and limits (Kubernetes
	// quantities: "1", "500m", "512Mi"); empty: none.
	CPU    string `yaml:"cpu"`
	Memory string `yaml:"memory"`
	// NodeSelector places the pods (a node's labels).
	NodeSelector map[string]string `yaml:"node_selector"`
	// TargetHost, when set, replaces the host of the target's URLs the
	// pods are given (keeping scheme, port and path): the name by which
	// pods reach a target soakd serves itself (a Service, say), since
	// its own listen address means nothing in another pod.
	TargetHost string `yaml:"target_host"`
}

// validateKubernetesDrivers checks kubernetes_drivers when a profile uses
// the Kubernetes backend (used names the first one that does).
func (k KubernetesDriversConfig) validate(used string) []FieldError {
	var ps []FieldError
	bad := func(path, format string, args ...any) {
		ps = append(ps, FieldError{Path: "kubernetes_drivers." + path, Msg: fmt.Sprintf(format, args...)})
	}
	if errs := validation.IsDNS1123Label(k.Namespace); len(errs) > 0 {
		bad("namespace", "must be a namespace name (got %q: %s)", k.Namespace, errs[0])
	}
	if used != "" && k.Image == "" {
		bad("image", "must name the soakd image the driver pods run (%s sets drivers.backend: kubernetes): the same build as this soakd, e.g. one built from the repository's Dockerfile", used)
	}
	switch k.ImagePullPolicy {
	case "Always", "IfNotPresent", "Never":
	default:
		bad("image_pull_policy", "must be Always, IfNotPresent or Never (got %q)", k.ImagePullPolicy)
	}
	if k.ServiceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(k.ServiceAccount); len(errs) > 0 {
			bad("service_account", "must be a service account name (got %q: %s)", k.ServiceAccount, errs[0])
		}
	}
	if k.ReadyTimeout < time.Second {
		bad("ready_timeout", "must be at least 1s: the pods' time to be scheduled, pull the image and start (got %s)", k.ReadyTimeout)
	}
	if k.TTL < 0 {
		bad("ttl", "must not be negative (got %s)", k.TTL)
	}
	for key, q := range map[string]string{"cpu": k.CPU, "memory": k.Memory} {
		if q == "" {
			continue
		}
		if v, err := resource.ParseQuantity(q); err != nil || v.Sign() <= 0 {
			bad(key, "must be a positive Kubernetes quantity such as %s (got %q)", map[string]string{"cpu": `"1" or "500m"`, "memory": `"512Mi"`}[key], q)
		}
	}
	if h := k.TargetHost; h != "" {
		if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 && net.ParseIP(h) == nil {
			bad("target_host", "must be a host name or an IP address, without scheme or port (got %q)", h)
		}
	}
	for k := range k.NodeSelector {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			bad("node_selector", "%q is not a label key: %s", k, errs[0])
		}
	}
	return ps
}

// validate checks target.kubernetes (target.kind kubernetes).
func (k KubeTargetConfig) validate() []FieldError {
	var ps []FieldError
	bad := func(path, format string, args ...any) {
		ps = append(ps, FieldError{Path: "target.kubernetes." + path, Msg: fmt.Sprintf(format, args...)})
	}
	if errs := validation.IsDNS1123Label(k.Namespace); len(errs) > 0 {
		bad("namespace", "must be a namespace name (got %q: %s)", k.Namespace, errs[0])
	}
	if sel, err := labels.Parse(k.Selector); err != nil {
		bad("selector", "must be a label selector such as app=books (got %q: %v)", k.Selector, err)
	} else if sel.Empty() {
		bad("selector", "must select the service's pods by label, such as app=books: an empty selector would take every pod of the namespace as a replica")
	}
	if n, err := strconv.Atoi(k.MetricsPort); err == nil {
		if n < 1 || n > 65535 {
			bad("metrics_port", "must be a port number 1 … 65535 or a container port's name (got %d)", n)
		}
	} else if errs := validation.IsValidPortName(k.MetricsPort); len(errs) > 0 {
		bad("metrics_port", "must be the replicas' metrics port: a number, or a container port's name (got %q: %s)", k.MetricsPort, errs[0])
	}
	if !strings.HasPrefix(k.MetricsPath, "/") || strings.ContainsAny(k.MetricsPath, "?# ") {
		bad("metrics_path", "must be a path such as /metrics, without query or fragment (got %q)", k.MetricsPath)
	}
	switch k.ScrapeVia {
	case ScrapeViaAPIServer, ScrapeViaPodIP:
	default:
		bad("scrape_via", "must be %s (through the API server's pod proxy: soakd outside the cluster) or %s (straight to each pod: soakd in the cluster) (got %q)", ScrapeViaAPIServer, ScrapeViaPodIP, k.ScrapeVia)
	}
	if k.MinReplicas < 1 || k.MinReplicas > 1000 {
		bad("min_replicas", "must be between 1 and 1000 (got %d)", k.MinReplicas)
	}
	return ps
}
