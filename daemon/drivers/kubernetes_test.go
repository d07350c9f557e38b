package drivers

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/testkit"
	"github.com/soakd/soakd/workloads"
)

func kubeConfig() config.KubernetesDriversConfig {
	return config.KubernetesDriversConfig{Namespace: "soak", Image: "reg/soakd:v1", ImagePullPolicy: "IfNotPresent", ServiceAccount: "soakd-driver",
		ReadyTimeout: 30 * time.Second, TTL: 10 * time.Minute, CPU: "1", Memory: "512Mi", NodeSelector: map[string]string{"pool": "load"}}
}

// TestJobSpec: the Indexed Job a phase of 4 shards gets.
func TestJobSpec(t *testing.T) {
	spec := workloads.Phase{Name: "graphql-load#2", RequestTimeout: 10 * time.Second, Duration: time.Minute, StartAt: time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)}
	j := jobSpec("soakd-drive-x", "20261202T010000Z", spec, 4, kubeConfig(), []string{"--target", "http://books:8080"})
	s := j.Spec
	if *s.Completions != 4 || *s.Parallelism != 4 || *s.CompletionMode != batchv1.IndexedCompletion || *s.BackoffLimit != 0 || *s.TTLSecondsAfterFinished != 600 {
		t.Errorf("job spec %+v", s)
	}
	if *s.ActiveDeadlineSeconds != 30+60+10+5+60 {
		t.Errorf("active deadline %d", *s.ActiveDeadlineSeconds)
	}
	if j.Labels[labelPhase] != "graphql-load_2" || j.Annotations["soakd.io/phase-name"] != "graphql-load#2" || j.Annotations["soakd.io/start-at"] != "2026-12-02T01:02:03Z" {
		t.Errorf("labels %v annotations %v", j.Labels, j.Annotations)
	}
	p := s.Template.Spec
	c := p.Containers[0]
	wantArgs := []string{"drive", "--target", "http://books:8080", "--spec", "/etc/soakd/spec.json", "--log-format", "json", "--shard", "$(JOB_COMPLETION_INDEX)/4"}
	if !slices.Equal(c.Args, wantArgs) || c.Command != nil || c.Image != "reg/soakd:v1" {
		t.Errorf("container %q %q %s", c.Command, c.Args, c.Image)
	}
	if p.RestartPolicy != corev1.RestartPolicyNever || *p.AutomountServiceAccountToken || p.ServiceAccountName != "soakd-driver" || *p.TerminationGracePeriodSeconds != 15 || p.NodeSelector["pool"] != "load" {
		t.Errorf("pod spec %+v", p)
	}
	if c.Resources.Limits.Cpu().String() != "1" || c.Resources.Requests.Memory().String() != "512Mi" || !*c.SecurityContext.RunAsNonRoot || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("resources %+v security %+v", c.Resources, c.SecurityContext)
	}
	if p.Volumes[0].ConfigMap.Name != "soakd-drive-x" || c.VolumeMounts[0].MountPath != "/etc/soakd" {
		t.Errorf("volume %+v mount %+v", p.Volumes, c.VolumeMounts)
	}
	one := jobSpec("j", "r", workloads.Phase{Name: "p"}, 1, kubeConfig(), nil)
	if slices.Contains(one.Spec.Template.Spec.Containers[0].Args, "--shard") || one.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("one driver without a duration: args %q deadline %v", one.Spec.Template.Spec.Containers[0].Args, one.Spec.ActiveDeadlineSeconds)
	}
}

// TestPodFatal: every pod state that ends a shard, and those that do not.
func TestPodFatal(t *testing.T) {
	term := func(reason string, code int32) corev1.ContainerStatus {
		return corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}}}
	}
	for _, tc := range []struct {
		name string
		st   corev1.PodStatus
		want string
	}{
		{"pending", corev1.PodStatus{Phase: corev1.PodPending}, ""},
		{"running", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}, ""},
		{"succeeded", corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{term("Completed", 0)}}, ""},
		{"oom", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{term("OOMKilled", 137)}}, "its container terminated: OOMKilled (exit 137)"},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}, "evicted: low on memory"},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes"}}}, "unschedulable: 0/3 nodes"},
		{"restarted", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{RestartCount: 1}}}, "restarted 1 time(s)"},
		{"image", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}}}}, "cannot start: ImagePullBackOff: not found"},
		{"creating", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}, ""},
	} {
		got := podFatal(&corev1.Pod{Status: tc.st})
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	prev := map[int]podView{1: {name: "a"}}
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "1"}}}
	if v := viewPods([]corev1.Pod{pod}, prev)[1]; !strings.Contains(v.fatal, "pod a was replaced by b") {
		t.Errorf("a replaced pod: %+v", v)
	}
}

// TestFollowerResumesExactly: a stream read again from the last second
// (as sinceTime, in whole seconds, makes it) delivers each line once, and
// a window seen before is dropped even at another timestamp.
func TestFollowerResumesExactly(t *testing.T) {
	var windows []int64
	progress := 0
	f := &follower{log: zap.NewNop(), lastSeq: -1, progress: func(workloads.Progress) { progress++ }, window: func(w workloads.SecondWindow) { windows = append(windows, w.Seq) }}
	t0 := time.Date(2026, 12, 2, 1, 2, 3, 0, time.UTC)
	line := func(at time.Duration, text string) []byte {
		return []byte(t0.Add(at).Format(time.RFC3339Nano) + " " + text + "\n")
	}
	win := func(seq int) string {
		return fmt.Sprintf(`{"version":1,"type":"window","window":{"shard":0,"seq":%d,"second":%d,"requests":1}}`, seq, seq)
	}
	first := [][]byte{line(100*time.Millisecond, `{"level":"info","msg":"drive started"}`), line(200*time.Millisecond, win(0)),
		line(300*time.Millisecond, `{"version":1,"type":"progress","progress":{"requests":1}}`), line(1200*time.Millisecond, win(1))}
	for _, l := range first {
		if err := f.line(l); err != nil {
			t.Fatal(err)
		}
	}
	// Resumed from the second of the last line: that second's lines again,
	// then new ones; and a stray duplicate window at a later instant.
	again := [][]byte{line(1200*time.Millisecond, win(1)), line(1900*time.Millisecond, win(2)), line(2100*time.Millisecond, win(2)),
		line(2500*time.Millisecond, `{"version":1,"type":"result","result":{"phase":"p","requests":3}}`)}
	for _, l := range again {
		if err := f.line(l); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(windows, []int64{0, 1, 2}) || progress != 1 || f.result == nil || f.result.Requests != 3 {
		t.Errorf("windows %v, progress %d, result %+v", windows, progress, f.result)
	}
	if err := f.line([]byte("no timestamp\n")); err == nil {
		t.Error("a line without the kubelet's timestamp was taken")
	}
}

// TestShippedRoleIsLeastPrivilege drives every API call the backend makes
// against a recording fake clientset (create the phase's Job and
// ConfigMap, list its pods, get one to say why it is late, follow its log,
// stop it, delete the Job) and checks deploy/kubernetes/rbac.yaml's
// soakd-drivers Role: every verb used is granted, every verb granted is
// used. (The end-to-end tests run with that Role on a real API server.)
func TestShippedRoleIsLeastPrivilege(t *testing.T) {
	cs := fake.NewClientset()
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	cs.PrependReactor("get", "pods/log", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &runtime.Unknown{Raw: []byte(ts + ` {"version":1,"type":"result","result":{"phase":"p","requests":1}}` + "\n")}, nil
	})
	k := Kubernetes{Log: zap.NewNop(), Client: cs, Config: kubeConfig(), Run: "r", Target: []string{"--target", "http://127.0.0.1:1"}}
	ctx := context.Background()
	ph, err := k.Open(ctx, workloads.Phase{Name: "p", RequestTimeout: time.Second, StartAt: time.Now()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := ph.(*kubePhase)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.job + "-0-x", Namespace: "soak", Labels: map[string]string{batchv1.JobNameLabel: p.job},
		Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if _, err := cs.CoreV1().Pods("soak").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = p.describe(ctx, pod.Name)
	f := &follower{log: zap.NewNop(), lastSeq: -1}
	_ = p.follow(ctx, pod.Name, f)
	if f.result == nil {
		t.Fatal("the fake log's result was not read")
	}
	p.stopPod(pod.Name)
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, a := range cs.Actions() {
		res := a.GetResource().Resource
		if s := a.GetSubresource(); s != "" {
			res += "/" + s
		}
		if res == "pods" && a.GetVerb() == "create" {
			continue // the test's own pod
		}
		used[res+" "+a.GetVerb()] = true
	}
	testkit.LeastPrivilege(t, "soakd-drivers", used)
}

// TestPodTarget: target_host replaces every URL's host, keeping the
// rest; an unspecified listen address without it is refused.
func TestPodTarget(t *testing.T) {
	in := []string{"--graphql-url", "http://0.0.0.0:8080/graphql", "--rest-url", "http://0.0.0.0:8080", "--graphql-ws-url", "ws://0.0.0.0:8080/graphql"}
	got, err := PodTarget(in, "soakd.soak.svc")
	want := []string{"--graphql-url", "http://soakd.soak.svc:8080/graphql", "--rest-url", "http://soakd.soak.svc:8080", "--graphql-ws-url", "ws://soakd.soak.svc:8080/graphql"}
	if err != nil || !slices.Equal(got, want) || in[1] != "http://0.0.0.0:8080/graphql" {
		t.Errorf("got %q %v, want %q (and the input unchanged)", got, err, want)
	}
	if _, err := PodTarget(in, ""); err == nil || !strings.Contains(err.Error(), "kubernetes_drivers.target_host") {
		t.Errorf("0.0.0.0 without target_host: %v", err)
	}
	if got, err := PodTarget([]string{"--target", "http://books.soak.svc:80"}, ""); err != nil || got[1] != "http://books.soak.svc:80" {
		t.Errorf("a Service URL as it is: %q %v", got, err)
	}
}

// TestShippedManifests: every object of deploy/kubernetes decodes strictly
// as the API server would take it, and serve.yaml's soakd.yaml is a valid
// soakd configuration whose cluster profile uses this backend.
func TestShippedManifests(t *testing.T) {
	for _, name := range []string{"rbac.yaml", "serve.yaml"} {
		raw, err := os.ReadFile("../../deploy/kubernetes/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(raw), "\n---\n") {
			body, err := yaml.YAMLToJSONStrict([]byte(doc))
			if err != nil {
				t.Fatalf("%s document %d: %v", name, i, err)
			}
			if string(body) == "null" {
				continue
			}
			obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", name, i, err)
			}
			strict, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				t.Fatal(err)
			}
			var loose map[string]any
			_ = json.Unmarshal(body, &loose)
			if err := unknownFields(loose, strict, gvk.Kind); err != nil {
				t.Errorf("%s document %d: %v", name, i, err)
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == "soakd-config" {
				cfg, err := config.Load(testkit.Defaults(t), []byte(cm.Data["soakd.yaml"]), "serve.yaml soakd.yaml")
				if err != nil {
					t.Fatalf("serve.yaml's soakd.yaml: %v", err)
				}
				if cfg.Profiles["cluster"].Drivers.Backend != config.BackendKubernetes || cfg.KubernetesDrivers.TargetHost == "" {
					t.Errorf("serve.yaml's cluster profile: drivers %+v, target_host %q", cfg.Profiles["cluster"].Drivers, cfg.KubernetesDrivers.TargetHost)
				}
			}
		}
	}
}

// unknownFields reports a key of loose (the manifest) that the typed
// object strict dropped: a misspelt field the API server would refuse.
func unknownFields(loose, strict map[string]any, at string) error {
	for k, v := range loose {
		sv, ok := strict[k]
		if !ok {
			if k == "status" || k == "stringData" && at == "Secret" {
				continue
			}
			return fmt.Errorf("%s.%s is not a field of the object", at, k)
		}
		if lm, ok := v.(map[string]any); ok {
			if sm, ok := sv.(map[string]any); ok {
				if err := unknownFields(lm, sm, at+"."+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
