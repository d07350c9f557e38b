package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/soakd/soakd/internal/kubetest"
	"github.com/soakd/soakd/internal/testkit"
)

// kubeEnv is a real control plane with the node agent running soakd's
// binary for the image "soakd", the shipped RBAC applied in namespace
// default, and a kubeconfig of the service account soakd (so the run has
// the Role's permissions, not an admin's).
// kubeNS is the shipped manifests' namespace.
const kubeNS = "soak"

type kubeEnv struct {
	cluster    *kubetest.Cluster
	agent      *kubetest.Agent
	admin      kubernetes.Interface
	kubeconfig string
}

func startKube(t *testing.T, bin string, unschedulable func(*corev1.Pod) bool) kubeEnv {
	t.Helper()
	return startKubeWith(t, map[string]string{"soakd": bin}, unschedulable)
}

// startKubeWith is startKube with the agent's images given (image name to
// executable).
func startKubeWith(t *testing.T, images map[string]string, unschedulable func(*corev1.Pod) bool) kubeEnv {
	t.Helper()
	c := kubetest.Start(t, kubetest.Options{Agent: &kubetest.AgentOptions{Images: images, Unschedulable: unschedulable}})
	a := c.Agent
	admin := c.Clientset(t, c.AdminConfig())
	rbac, err := os.ReadFile(filepath.Join(testkit.Root(t), "deploy", "kubernetes", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(t.Context(), rbac); err != nil {
		t.Fatalf("deploy/kubernetes/rbac.yaml: %v", err)
	}
	sa, err := c.ServiceAccountConfig(t.Context(), kubeNS, "soakd")
	if err != nil {
		t.Fatal(err)
	}
	return kubeEnv{cluster: c, agent: a, admin: admin, kubeconfig: c.Kubeconfig(t, sa)}
}

// kubeConfig is shardedConfig(shards, mutations) with the Kubernetes
// backend pointed at env.
func (env kubeEnv) config(shards, mutations int) string {
	cfg := strings.Replace(shardedConfig(shards, mutations), fmt.Sprintf("drivers: {shards: %d}", shards), fmt.Sprintf("drivers: {backend: kubernetes, shards: %d}", shards), 1)
	return cfg + fmt.Sprintf("\nkubernetes_drivers:\n  kubeconfig: %s\n  namespace: %s\n  image: soakd:e2e\n  ready_timeout: 8s\n", env.kubeconfig, kubeNS)
}

// noDriversLeft waits until the namespace holds no Job, no driver pod and
// no ConfigMap of soakd's: the backend deleted its Job and the garbage
// collector what it owned.
func (env kubeEnv) noDriversLeft(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=soakd-driver"}
	var left string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		jobs, err1 := env.admin.BatchV1().Jobs(kubeNS).List(ctx, sel)
		pods, err2 := env.admin.CoreV1().Pods(kubeNS).List(ctx, sel)
		cms, err3 := env.admin.CoreV1().ConfigMaps(kubeNS).List(ctx, sel)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatal(err1, err2, err3)
		}
		if len(jobs.Items)+len(pods.Items)+len(cms.Items) == 0 {
			return
		}
		left = fmt.Sprintf("%d jobs, %d pods, %d configmaps", len(jobs.Items), len(pods.Items), len(cms.Items))
	}
	t.Errorf("after the run the namespace still holds %s of soakd's drivers", left)
}

// TestKubeShardedRunMatchesLocal runs the same closed profile with three
// shards as the pods of an Indexed Job (real API server, RBAC with the
// shipped Role, the real Job controller, pods run by the node agent, logs
// read through pods/log) and as three local processes: every phase
// completes the same requests per operation (exactly: iterations), the
// subscription account is exact across the pods, each shard names its pod
// and its own load CPU with the OS's figures null (not 0), and no Job, pod
// or ConfigMap is left behind.
func TestKubeShardedRunMatchesLocal(t *testing.T) {
	bin := buildSoakd(t)
	env := startKube(t, bin, nil)
	kube, code := runSharded(t, bin, env.config(3, 300))
	local, codeLocal := runSharded(t, bin, shardedConfig(3, 300))
	if kube.Status != "complete" || local.Status != "complete" || len(kube.Phases) != 2 {
		t.Fatalf("kubernetes: %q %s (exit %d); local %q (exit %d)", kube.Status, kube.Error, code, local.Status, codeLocal)
	}
	raw, _, _ := runConfig(t, bin, env.config(3, 300))
	for i, p := range kube.Phases {
		q := local.Phases[i]
		t.Logf("phase %s: kubernetes %d requests %.0f req/s; local %d requests %.0f req/s", p.Name, p.Requests, p.ThroughputRPS, q.Requests, q.ThroughputRPS)
		if p.Requests != q.Requests || p.Requests != 3000 || p.Errors != 0 {
			t.Errorf("phase %s: kubernetes %d requests (%d errors), local %d: want 3000 each", p.Name, p.Requests, p.Errors, q.Requests)
		}
		for j, op := range p.Operations {
			if o := q.Operations[j]; op != o {
				t.Errorf("phase %s operation %d: kubernetes %+v, local %+v", p.Name, j, op, o)
			}
		}
		if len(p.DriverShards) != 3 {
			t.Fatalf("phase %s: driver_shards %+v", p.Name, p.DriverShards)
		}
	}
	if s, l := kube.Phases[1].Subscriptions, local.Phases[1].Subscriptions; s == nil || l == nil || *s != *l || s.Lost != 0 || s.Duplicated != 0 || s.Received != 3000 {
		t.Errorf("subscriptions: kubernetes %+v, local %+v: want 3000 events received by each, none lost or duplicated", s, l)
	}
	// The third run's shards, read raw: the pod, null OS figures, the
	// driver's own load CPU.
	for _, ph := range rows(raw, "phases") {
		if ph["driver_cpu_percent"] != nil {
			t.Errorf("phase %v: driver_cpu_percent %v, want null (soakd cannot see the pods' processes)", ph["name"], ph["driver_cpu_percent"])
		}
		for _, sh := range rows(ph, "driver_shards") {
			pod, _ := sh["pod"].(string)
			cpu, _ := sh["load_cpu_seconds"].(float64)
			t.Logf("  phase %v shard %v: pod %s, %v requests, load CPU %.3f s (%.1f %% of a core)", ph["name"], sh["shard"], pod, sh["requests"], cpu, sh["load_cpu_core_percent"])
			if !strings.HasPrefix(pod, kubeNS+"/soakd-drive-") || sh["cpu_seconds"] != nil || sh["cpu_percent"] != nil || cpu <= 0 {
				t.Errorf("phase %v shard %+v: want its pod, null OS CPU and a positive load CPU", ph["name"], sh)
			}
		}
	}
	env.noDriversLeft(t)
}

// runKubeAsync starts `soakd run` on cfg and returns a channel with its
// report and exit code once it ends.
func runKubeAsync(t *testing.T, bin, cfg string) <-chan kubeResult {
	dir := t.TempDir()
	path, out := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "run")
	if err := os.WriteFile(path, []byte(cfg+"\ndata_dir: "+filepath.Join(dir, "data")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan kubeResult, 1)
	go func() {
		_, stderr, code := runSoakdWithin(t, 5*time.Minute, bin, "run", "--config", path, "--out", out, "--log-format", "json")
		var r shardedReport
		if raw, err := os.ReadFile(filepath.Join(out, "report.json")); err == nil {
			_ = json.Unmarshal(raw, &r)
		}
		done <- kubeResult{rep: r, code: code, stderr: stderr}
	}()
	return done
}

type kubeResult struct {
	rep    shardedReport
	code   int
	stderr string
}

// runningDriverPod waits for a running driver pod of the shard index.
func (env kubeEnv) runningDriverPod(t *testing.T, index string) string {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pods, err := env.admin.CoreV1().Pods(kubeNS).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=soakd-driver"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if p.Annotations["batch.kubernetes.io/job-completion-index"] == index && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				if _, ok := env.agent.Process(kubeNS, p.Name); ok {
					return p.Name
				}
			}
		}
	}
	t.Fatalf("no running driver pod of shard %s within a minute", index)
	return ""
}

// TestKubePodKilledMidPhase: shard 2's pod, OOM-killed a second into its
// load, aborts the run (exit 3) within seconds, the error naming the pod
// and the reason, and the Job is deleted.
func TestKubePodKilledMidPhase(t *testing.T) {
	bin := buildSoakd(t)
	env := startKube(t, bin, nil)
	done := runKubeAsync(t, bin, env.config(3, 20000))
	pod := env.runningDriverPod(t, "2")
	time.Sleep(2 * time.Second) // into the load, which starts once all three run
	if err := env.agent.Kill(kubeNS, pod, "OOMKilled"); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	r := <-done
	t.Logf("ended %s after the kill: exit %d, %s", time.Since(killed).Round(time.Millisecond), r.code, r.rep.Error)
	if r.code != 3 || !strings.Contains(r.rep.Error, "shard 2/3") || !strings.Contains(r.rep.Error, pod) || !strings.Contains(r.rep.Error, "OOMKilled") {
		t.Errorf("exit %d, error %q: want 3, naming shard 2/3, pod %s and OOMKilled", r.code, r.rep.Error, pod)
	}
	env.noDriversLeft(t)
}

// TestKubePodNeverStarts: a pod no node can take fails the phase at once
// with the scheduler's reason, naming the shard and its pod (exit 3, no
// hang), and the Job is deleted.
func TestKubePodNeverStarts(t *testing.T) {
	bin := buildSoakd(t)
	env := startKube(t, bin, func(p *corev1.Pod) bool {
		return p.Annotations["batch.kubernetes.io/job-completion-index"] == "1"
	})
	start := time.Now()
	r := <-runKubeAsync(t, bin, env.config(3, 300))
	t.Logf("ended after %s: exit %d, %s", time.Since(start).Round(time.Millisecond), r.code, r.rep.Error)
	if r.code != 3 || !strings.Contains(r.rep.Error, "shard 1 of 3") || !strings.Contains(r.rep.Error, "unschedulable: "+kubetest.UnschedulableMessage) {
		t.Errorf("exit %d, error %q: want 3, naming shard 1 of 3 and why it cannot be scheduled", r.code, r.rep.Error)
	}
	env.noDriversLeft(t)
}

// TestKubeDroppedLogStreams: every driver pod's log stream of graphql-load
// is dropped one and two seconds into its load; the backend follows each again from its last
// line, and the phase's figures are exact: every request counted once,
// no window lost or counted twice (PhaseWindows would refuse either).
func TestKubeDroppedLogStreams(t *testing.T) {
	bin := buildSoakd(t)
	env := startKube(t, bin, nil)
	done := runKubeAsync(t, bin, env.config(3, 1000))
	// graphql-load's Job says when its load starts (soakd.io/start-at):
	// drop every pod's stream one and two seconds into the load, when
	// windows are flowing.
	var startAt time.Time
	for deadline := time.Now().Add(2 * time.Minute); startAt.IsZero(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no graphql-load Job within two minutes")
		}
		jobs, err := env.admin.BatchV1().Jobs(kubeNS).List(t.Context(), metav1.ListOptions{LabelSelector: "soakd.io/phase=graphql-load"})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs.Items {
			startAt, _ = time.Parse(time.RFC3339Nano, j.Annotations["soakd.io/start-at"])
		}
	}
	var pods []string
	for _, i := range []string{"0", "1", "2"} {
		pods = append(pods, env.runningDriverPod(t, i))
	}
	for _, at := range []time.Duration{time.Second, 2 * time.Second} {
		time.Sleep(time.Until(startAt.Add(at)))
		for _, p := range pods {
			if err := env.agent.DropLogStreams(kubeNS, p); err != nil {
				t.Errorf("pod %s ended before its stream could be dropped %s into the load: %v", p, at, err)
			}
		}
	}
	r := <-done
	if r.code == 3 || r.rep.Status != "complete" {
		t.Fatalf("exit %d, status %q: %s", r.code, r.rep.Status, r.rep.Error)
	}
	for i, want := range []int64{3000, 1500 + 5*1000} {
		if p := r.rep.Phases[i]; p.Requests != want || p.Errors != 0 {
			t.Errorf("phase %s: %d requests (%d errors), want %d exactly", p.Name, p.Requests, p.Errors, want)
		}
	}
	if s := r.rep.Phases[1].Subscriptions; s == nil || s.Lost != 0 || s.Duplicated != 0 || s.Received != s.Expected {
		t.Errorf("subscriptions %+v: want every event once", s)
	}
	if n := strings.Count(r.stderr, "following it again from its last line"); n < 3 {
		t.Errorf("%d log streams were followed again, want at least one per pod (3): the drops did not happen where the test meant them", n)
	}
	env.noDriversLeft(t)
}
