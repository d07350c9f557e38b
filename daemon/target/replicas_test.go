package target

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/testkit"
)

// replicaPod is a running, ready replica of app=books with a metrics port
// named metrics and a CPU limit of 500m.
func replicaPod(name string, restarts int32) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("uid-" + name), Labels: map[string]string{"app": "books"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "books", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 4000}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "books", RestartCount: restarts}}},
	}
}

// apiServer stands in for the API server's pod proxy: it answers a Go
// replica's metrics at /api/v1/namespaces/shop/pods/<pod>:4000/proxy/metrics
// for the bearer token "t", and records the paths asked.
func apiServer(t *testing.T) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer t" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if strings.Contains(r.URL.Path, "redirecting") {
			http.Redirect(w, r, "http://elsewhere.invalid/metrics", http.StatusFound)
			return
		}
		fmt.Fprint(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 2.5\n# TYPE go_goroutines gauge\ngo_goroutines 7\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &paths
}

func kubeTarget() *config.Config {
	return &config.Config{
		Target: config.TargetConfig{Kind: "kubernetes", Runtime: "go", ReadyTimeout: time.Second, Kubernetes: config.KubeTargetConfig{
			Namespace: "shop", Selector: "app=books", MetricsPort: "metrics", MetricsPath: "/metrics", ScrapeVia: config.ScrapeViaAPIServer, MinReplicas: 2}},
		Sampler: config.SamplerConfig{Interval: 250 * time.Millisecond},
	}
}

// TestReplicaSetThroughThePodProxy: the replicas are found by selector and
// scraped through the API server's pod proxy (the port resolved by name,
// the cluster's credentials sent), their figures summed; the Role the
// repository ships grants exactly the verbs this uses.
func TestReplicaSetThroughThePodProxy(t *testing.T) {
	srv, paths := apiServer(t)
	cs := fake.NewClientset(replicaPod("books-a", 0), replicaPod("books-b", 0))
	rs, err := openReplicaSet(t.Context(), kubeTarget(), &rest.Config{Host: srv.URL, BearerToken: "t"}, cs, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	s, err := rs.SampleNow(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if g := s.ExtraFigure("goroutines"); !g.Measured || g.Value != 14 || !strings.Contains(g.Source, "summed over 2 replicas (shop/books-a, shop/books-b)") {
		t.Errorf("goroutines %+v: want 7 + 7, naming both replicas", g)
	}
	want := map[string]bool{"/api/v1/namespaces/shop/pods/books-a:4000/proxy/metrics": true, "/api/v1/namespaces/shop/pods/books-b:4000/proxy/metrics": true}
	for _, p := range *paths {
		if !want[p] {
			t.Errorf("the proxy was asked for %s", p)
		}
	}
	if c := rs.capacityCores(); c != 1 {
		t.Errorf("capacity %v cores, want 2 × 500m", c)
	}
	if err := rs.follow(mustList(t, rs), time.Now()); err != nil {
		t.Fatal(err)
	}

	used := map[string]bool{"pods/proxy get": len(*paths) > 0}
	for _, a := range cs.Actions() {
		used[a.GetResource().Resource+" "+a.GetVerb()] = true
	}
	testkit.LeastPrivilege(t, "soakd-target", used)
}

// TestPodProxyScrapeFollowsNoRedirect: a pod proxy that answers 302 is not
// followed (the cluster's credentials would go with it): the figure is not
// measured, naming the redirect.
func TestPodProxyScrapeFollowsNoRedirect(t *testing.T) {
	srv, _ := apiServer(t)
	cfg := kubeTarget()
	cfg.Target.Kubernetes.MinReplicas = 1
	cs := fake.NewClientset(replicaPod("redirecting", 0))
	rs, err := openReplicaSet(t.Context(), cfg, &rest.Config{Host: srv.URL, BearerToken: "t"}, cs, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	s, _ := rs.SampleNow(t.Context())
	if f := s.Runtime.GCCycles; f.Measured || !strings.Contains(f.Reason, "shop/redirecting: ") || !strings.Contains(f.Reason, "redirect") {
		t.Errorf("gc cycles %+v: want not measured, the redirect refused and the replica named", f)
	}
}

func mustList(t *testing.T, rs *replicaSet) []corev1.Pod {
	t.Helper()
	pods, err := rs.list(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return pods
}

// TestReplicaSetChanges: a restart, a replica gone and a new one are each
// an event; without allow_restarts the first stops the run naming the
// replica, with it the set follows (a restarted replica under a new name).
func TestReplicaSetChanges(t *testing.T) {
	srv, _ := apiServer(t)
	for _, allow := range []bool{false, true} {
		cfg := kubeTarget()
		cfg.Target.Kubernetes.AllowRestarts = allow
		cs := fake.NewClientset(replicaPod("books-a", 0), replicaPod("books-b", 0))
		rs, err := openReplicaSet(t.Context(), cfg, &rest.Config{Host: srv.URL, BearerToken: "t"}, cs, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		restarted := replicaPod("books-a", 1)
		restarted.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}
		err = rs.follow([]corev1.Pod{*restarted, *replicaPod("books-b", 0)}, time.Now())
		if !allow {
			if err == nil || !strings.Contains(err.Error(), "replica shop/books-a restarted (restart count 0 → 1; container books last ended: OOMKilled, exit code 137)") ||
				!strings.Contains(err.Error(), "allow_restarts") {
				t.Errorf("restart without allow_restarts: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := rs.follow([]corev1.Pod{*restarted, *replicaPod("books-c", 0)}, time.Now()); err != nil {
			t.Fatal(err)
		}
		reps, evs := rs.info()
		var got []string
		for _, e := range evs {
			got = append(got, e.Pod+" "+e.Event)
		}
		if strings.Join(got, ", ") != "books-a restarted, books-b left, books-c joined" {
			t.Errorf("events %v", got)
		}
		if len(reps) != 2 || reps[0].Pod != "books-a" || reps[0].Restarts != 1 || reps[1].Pod != "books-c" {
			t.Errorf("replicas after the changes: %+v", reps)
		}
		if n := rs.current[0].name(); n != "shop/books-a (restart 1)" {
			t.Errorf("the restarted replica is summed as %q", n)
		}
	}
}

// TestReplicaSetNotReady: fewer ready replicas than min_replicas by
// ready_timeout is a usage error naming what each pod is doing.
func TestReplicaSetNotReady(t *testing.T) {
	srv, _ := apiServer(t)
	pending := replicaPod("books-b", 0)
	pending.Status.Phase = corev1.PodPending
	cs := fake.NewClientset(replicaPod("books-a", 0), pending)
	_, err := openReplicaSet(t.Context(), kubeTarget(), &rest.Config{Host: srv.URL, BearerToken: "t"}, cs, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "1 of the 2 replicas") || !strings.Contains(err.Error(), "books-b Pending") {
		t.Errorf("err %v: want 1 of 2 ready, naming books-b Pending", err)
	}
}
