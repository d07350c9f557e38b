package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/soakd/soakd/internal/testkit"
)

// replicaCount is how many gobooks replicas the Kubernetes target tests run.
const replicaCount = 3

// startReplicas creates replicaCount bare pods of examples/gobooks in
// namespace soak (label app=gobooks, each listening on its own pod IP, a
// container port named metrics, a CPU limit of 500m, restartPolicy Always)
// and waits until the agent runs them all and each answers; it returns
// their names and addresses (host:port).
func startReplicas(t *testing.T, env kubeEnv) (names, addrs []string) {
	t.Helper()
	ctx := t.Context()
	for i := range replicaCount {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gobooks-%d", i), Namespace: kubeNS, Labels: map[string]string{"app": "gobooks"}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways, Containers: []corev1.Container{{
				Name: "gobooks", Image: "gobooks:e2e",
				Args:      []string{"-host", "$(POD_IP)", "-port", "4000"},
				Env:       []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
				Ports:     []corev1.ContainerPort{{Name: "metrics", ContainerPort: 4000}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}},
			}}},
		}
		if _, err := env.admin.CoreV1().Pods(kubeNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		names = append(names, pod.Name)
	}
	for _, name := range names {
		var addr string
		for deadline := time.Now().Add(60 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			ip, ok := env.agent.PodIP(kubeNS, name)
			if !ok {
				continue
			}
			if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "4000"), time.Second); err == nil {
				c.Close()
				addr = net.JoinHostPort(ip, "4000")
			}
		}
		if addr == "" {
			t.Fatalf("replica %s does not answer within a minute", name)
		}
		addrs = append(addrs, addr)
	}
	return names, addrs
}

// roundRobin stands in for the Service's kube-proxy, which cannot run
// here: it listens on loopback and sends each new connection to the next
// backend, counting the connections each one got.
type roundRobin struct {
	ln       net.Listener
	backends []string
	next     atomic.Int64
	counts   []atomic.Int64
	wg       sync.WaitGroup
}

func startRoundRobin(t *testing.T, backends []string) *roundRobin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rr := &roundRobin{ln: ln, backends: backends, counts: make([]atomic.Int64, len(backends))}
	var conns sync.Map
	rr.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			i := int(rr.next.Add(1)-1) % len(backends)
			rr.counts[i].Add(1)
			rr.wg.Go(func() {
				defer c.Close()
				b, err := net.DialTimeout("tcp", backends[i], 5*time.Second)
				if err != nil {
					return
				}
				defer b.Close()
				conns.Store(c, b)
				defer conns.Delete(c)
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(b, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, b); done <- struct{}{} }()
				<-done
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, b any) bool {
			c.(net.Conn).Close()
			b.(net.Conn).Close()
			return true
		})
		rr.wg.Wait()
	})
	return rr
}

// kubeTargetConfig is examples/gobooks-command.yaml's operations and its
// gobooks-small profile (without the subscriptions: a replica publishes
// only to its own subscribers, and the proxy spreads them) with the
// target the replicas of app=gobooks, loaded through url.
func kubeTargetConfig(t *testing.T, env kubeEnv, url string, allowRestarts bool) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testkit.Root(t), "examples", "gobooks-command.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw[strings.Index(string(raw), "\noperations:"):])
	var kept []string
	for _, l := range strings.Split(body, "\n") {
		if !strings.Contains(l, "subscriptions:") {
			kept = append(kept, l)
		}
	}
	return fmt.Sprintf(`target:
  kind: kubernetes
  graphql_url: %[1]s/graphql
  rest_url: %[1]s
  runtime: go
  ready_timeout: 30s
  kubernetes:
    namespace: %[2]s
    selector: app=gobooks
    metrics_port: metrics
    scrape_via: pod_ip
    min_replicas: %[3]d
    allow_restarts: %[4]v
kubernetes_drivers:
  kubeconfig: %[5]s
`, url, kubeNS, replicaCount, allowRestarts, env.kubeconfig) + strings.Join(kept, "\n")
}

// TestKubeTargetSumsTheReplicas soaks a service of three gobooks replicas
// in a real control plane (the pods run by the node agent, listed with
// the shipped Role soakd-target through the service account's token),
// loaded through a round-robin proxy standing in for its Service: the
// report names the replicas, every compared phase's CPU, GC and
// allocation figures are measured and are sums over the three replicas
// (each replica served connections), the machine share is of the
// replicas' CPU limits (3 × 500m), the replicas' OS figures are null, not
// 0, and the KPI rows are judged.
func TestKubeTargetSumsTheReplicas(t *testing.T) {
	bin := buildSoakd(t)
	env := startKubeWith(t, map[string]string{"soakd": bin, "gobooks": buildGoBooks(t)}, nil)
	names, addrs := startReplicas(t, env)
	rr := startRoundRobin(t, addrs)
	rep, _, code := runConfig(t, bin, kubeTargetConfig(t, env, "http://"+rr.ln.Addr().String(), false))
	if code != 0 && code != 1 && code != 4 { // a verdict: pass, fail or inconclusive
		t.Fatalf("exit %d, status %v: %v", code, rep["status"], rep["error"])
	}
	for i := range rr.counts {
		t.Logf("replica %s (%s): %d connections", names[i], addrs[i], rr.counts[i].Load())
		if rr.counts[i].Load() == 0 {
			t.Errorf("replica %s got no connection: the load did not reach every replica", names[i])
		}
	}
	tgt, _ := rep["target"].(map[string]any)
	if tgt["kind"] != "kubernetes" || tgt["selector"] != "app=gobooks" || tgt["scrape_via"] != "pod_ip" || tgt["cpu_capacity_cores"] != 1.5 {
		t.Errorf("target %v", tgt)
	}
	var pods []string
	for _, r := range rows(tgt, "replicas") {
		pods = append(pods, r["pod"].(string))
	}
	if strings.Join(pods, ",") != strings.Join(names, ",") {
		t.Errorf("replicas %v, want %v", pods, names)
	}
	for _, f := range rows(tgt, "figures") {
		src, _ := f["source"].(string)
		switch f["name"] {
		case "cpu_seconds", "gc_cycles", "alloc_bytes":
			if f["measured"] != true || !strings.Contains(src, "summed over 3 replicas (soak/gobooks-0, soak/gobooks-1, soak/gobooks-2)") {
				t.Errorf("figure %v: want measured, summed over the three replicas", f)
			}
		case "rss_bytes", "fds":
			if f["measured"] == true {
				t.Errorf("figure %v: the replicas' OS figures cannot be read", f)
			}
		}
	}
	compared := 0
	for _, ph := range rows(rep, "phases") {
		if name, _ := ph["name"].(string); !strings.HasPrefix(name, "rest-control") && !strings.HasPrefix(name, "graphql-load") {
			t.Logf("phase %s", name)
			continue
		}
		compared++
		res, _ := ph["resources"].(map[string]any)
		cpu, _ := res["cpu_seconds"].(float64)
		share, _ := res["cpu_machine_percent"].(float64)
		win, _ := res["window_seconds"].(float64)
		t.Logf("phase %v: %v requests, CPU %.3f s over %.2f s (%.1f %% of 1.5 cores), GC %v %%, %v B allocated, rss %v",
			ph["name"], ph["requests"], cpu, win, share, res["gc_percent"], res["alloc_bytes"], res["rss_bytes_max"])
		if cpu <= 0 || win <= 0 || res["gc_percent"] == nil || res["alloc_bytes"] == nil {
			t.Errorf("phase %v resources %v: want CPU, GC and allocation measured", ph["name"], res)
			continue
		}
		if want := cpu / (win * 1.5) * 100; share < want*0.999 || share > want*1.001 {
			t.Errorf("phase %v: cpu_machine_percent %v, want CPU ÷ (window × 1.5 cores) = %v", ph["name"], share, want)
		}
		if res["rss_bytes_max"] != nil {
			t.Errorf("phase %v: rss_bytes_max %v, want null", ph["name"], res["rss_bytes_max"])
		}
	}
	if compared != 4 {
		t.Errorf("%d compared phases, want 2 rounds × rest-control and graphql-load", compared)
	}
	for _, k := range rows(rep, "kpis") {
		if k["name"] == "cpu_us_per_request" || k["name"] == "gc_percent" || k["name"] == "cpu_machine_percent" || k["name"] == "alloc_bytes_per_request" {
			t.Logf("kpi %v: REST %v, GraphQL %v, delta %v (%v)", k["name"], k["rest"], k["graphql"], k["delta"], k["outcome"])
			if k["delta"] == nil || k["graphql_not_measured"] == true || k["rest_not_measured"] == true {
				t.Errorf("kpi %v not measured: %v", k["name"], k["reason"])
			}
		}
	}
}

// TestKubeTargetReplicaRestarts: a replica killed mid-run restarts (the
// agent restarts it, as the kubelet would, with restartCount 1): without
// allow_restarts the run stops within seconds (exit 3), the error naming
// the replica and its restart.
func TestKubeTargetReplicaRestarts(t *testing.T) {
	bin := buildSoakd(t)
	env := startKubeWith(t, map[string]string{"soakd": bin, "gobooks": buildGoBooks(t)}, nil)
	names, addrs := startReplicas(t, env)
	rr := startRoundRobin(t, addrs)
	cfg := kubeTargetConfig(t, env, "http://"+rr.ln.Addr().String(), false)
	done := runKubeAsync(t, bin, cfg)
	// Into the run: the memory profile (6 s) starts once the replicas are sampled.
	time.Sleep(4 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("the run ended before the kill: exit %d, %s\n%s", r.code, r.rep.Error, r.stderr)
	default:
	}
	if err := env.agent.Kill(kubeNS, names[1], "Error"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	var r kubeResult
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not stop within 2 minutes of the restart")
	}
	t.Logf("ended %s after the kill: exit %d, %s", time.Since(killed).Round(time.Millisecond), r.code, r.rep.Error)
	if r.code != 3 || !strings.Contains(r.rep.Error, "replica soak/"+names[1]+" restarted (restart count 0 → 1") || !strings.Contains(r.rep.Error, "allow_restarts") {
		t.Errorf("exit %d, error %q: want 3, naming replica %s's restart and allow_restarts", r.code, r.rep.Error, names[1])
	}
}
