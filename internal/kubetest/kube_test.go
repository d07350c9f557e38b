package kubetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestKube runs the package's cluster tests on one control plane and
// agent (starting one is most of the time), each subtest in a namespace of
// its own, in parallel.
func TestKube(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := Start(t, Options{Agent: &AgentOptions{
		Images:        map[string]string{"busybox": "/bin/sh", "kubetest-helper": self},
		Unschedulable: func(p *corev1.Pod) bool { return p.Labels["kubetest-unschedulable"] == "yes" },
		RestartDelay:  200 * time.Millisecond,
	}})
	cs := c.Clientset(t, c.AdminConfig())
	a := c.Agent

	t.Run("IndexedJob", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "jobs")
		ctx := t.Context()
		job := indexedJob("three", 3, `echo "index=$JOB_COMPLETION_INDEX"; echo "ip=$POD_IP"`)
		job.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		jobCondition(t, cs, ns, "three", batchv1.JobComplete)
		ips := map[string]bool{}
		for idx, p := range jobPods(t, cs, ns, "three", 3) {
			if p.Status.Phase != corev1.PodSucceeded || !strings.HasPrefix(p.Status.PodIP, "127.0.0.") || ips[p.Status.PodIP] {
				t.Errorf("pod %s (index %s): phase %s, pod IP %q (seen: %v)", p.Name, idx, p.Status.Phase, p.Status.PodIP, ips)
			}
			ips[p.Status.PodIP] = true
			logs := readLogs(t, cs, ns, p.Name, &corev1.PodLogOptions{Follow: true})
			if want := fmt.Sprintf("index=%s\nip=%s\n", idx, p.Status.PodIP); logs != want {
				t.Errorf("pod %s (index %s) log %q, want %q", p.Name, idx, logs, want)
			}
		}
	})

	t.Run("DroppedLogStreamResumes", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "drop")
		ctx := t.Context()
		pod := shPod("slow", `i=0; while [ $i -lt 30 ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done`)
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPhase(t, cs, ns, "slow", corev1.PodRunning, corev1.PodSucceeded)
		stream, err := cs.CoreV1().Pods(ns).GetLogs("slow", &corev1.PodLogOptions{Follow: true, Timestamps: true}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var first []string
		sc := bufio.NewScanner(stream)
		for sc.Scan() {
			first = append(first, sc.Text())
			if len(first) == 3 {
				if err := a.DropLogStreams(ns, "slow"); err != nil {
					t.Fatal(err)
				}
			}
		}
		stream.Close()
		if len(first) < 3 || len(first) >= 30 {
			t.Fatalf("the dropped stream held %d lines, want it cut short after 3: %q", len(first), first)
		}
		for _, l := range first {
			if _, text, _ := strings.Cut(l, " "); !strings.HasPrefix(text, "line ") {
				t.Fatalf("the dropped stream cut a line: %q", l)
			}
		}
		// Resume from the last line's second (sinceTime is whole seconds,
		// so lines of that second come again: timestamps tell them apart).
		ts, _, _ := strings.Cut(first[len(first)-1], " ")
		last, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			t.Fatal(err)
		}
		rest := strings.Split(strings.TrimSuffix(readLogs(t, cs, ns, "slow", &corev1.PodLogOptions{Follow: true, Timestamps: true, SinceTime: &metav1.Time{Time: last}}), "\n"), "\n")
		seen := map[string]bool{}
		var texts []string
		for _, l := range append(first, rest...) {
			if !seen[l] {
				seen[l] = true
				_, text, _ := strings.Cut(l, " ")
				texts = append(texts, text)
			}
		}
		for i, text := range texts {
			if text != fmt.Sprintf("line %d", i) || len(texts) != 30 {
				t.Fatalf("the first stream and the resumed one hold %d distinct lines, want line 0 to line 29 once each: %q", len(texts), texts)
			}
		}
		if all := readLogs(t, cs, ns, "slow", &corev1.PodLogOptions{}); strings.Count(all, "\n") != 30 {
			t.Errorf("reading from the start again: %q, want 30 lines", all)
		}
	})

	t.Run("OOMKillFailsTheJob", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "oom")
		ctx := t.Context()
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, indexedJob("oom", 1, "echo up; sleep 60"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := jobPods(t, cs, ns, "oom", 1)["0"]
		pid := waitProcess(t, a, ns, pod.Name)
		if err := a.Kill(ns, pod.Name, "OOMKilled"); err != nil {
			t.Fatal(err)
		}
		cond := jobCondition(t, cs, ns, "oom", batchv1.JobFailed)
		if cond.Reason != batchv1.JobReasonBackoffLimitExceeded {
			t.Errorf("job failed with reason %q, want %s", cond.Reason, batchv1.JobReasonBackoffLimitExceeded)
		}
		p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st := p.Status.ContainerStatuses
		if p.Status.Phase != corev1.PodFailed || len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.Reason != "OOMKilled" || st[0].State.Terminated.ExitCode != 137 {
			t.Errorf("killed pod: phase %s, statuses %+v; want Failed, terminated OOMKilled exit 137", p.Status.Phase, st)
		}
		if err := waitFor(ctx, 10*time.Second, func() error { return gone(pid) }); err != nil {
			t.Errorf("the killed pod's process: %v", err)
		}
	})

	t.Run("UnschedulableStaysPending", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "unsched")
		ctx := t.Context()
		pod := shPod("nowhere", "echo never")
		pod.Labels = map[string]string{"kubetest-unschedulable": "yes"}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		unschedulable := func() error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "nowhere", metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
					strings.HasPrefix(c.Message, "0/1 nodes are available: ") && p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
					return nil
				}
			}
			return fmt.Errorf("pod nowhere: node %q, status %+v", p.Spec.NodeName, p.Status)
		}
		if err := waitFor(ctx, 30*time.Second, unschedulable); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // ten agent passes
		if err := unschedulable(); err != nil {
			t.Errorf("later: %v", err)
		}
	})

	t.Run("UnknownImageNeverStarts", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "noimage")
		ctx := t.Context()
		pod := shPod("noimage", "true")
		pod.Spec.Containers[0].Image = "nginx:1.27"
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, 30*time.Second, func() error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "noimage", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if st := p.Status.ContainerStatuses; p.Spec.NodeName == NodeName && p.Status.Phase == corev1.PodPending && len(st) == 1 &&
				st[0].State.Waiting != nil && st[0].State.Waiting.Reason == "ErrImagePull" && strings.Contains(st[0].State.Waiting.Message, `"nginx:1.27"`) {
				return nil
			}
			return fmt.Errorf("pod noimage: node %q, status %+v", p.Spec.NodeName, p.Status)
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("RBACForbidsLogsWithoutPodsLog", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		namespace(t, c, "rbac")
		if err := c.Apply(ctx, []byte(rbacManifests)); err != nil {
			t.Fatal(err)
		}
		if err := c.Apply(ctx, []byte(rbacManifests)); err != nil {
			t.Fatalf("applying the same manifests again: %v", err)
		}
		if _, err := cs.CoreV1().Pods("rbac").Create(ctx, shPod("hello", "echo hello"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPhase(t, cs, "rbac", "hello", corev1.PodSucceeded)
		for _, sa := range []struct {
			name      string
			forbidden bool
		}{{"no-logs", true}, {"logs", false}} {
			cfg, err := c.ServiceAccountConfig(ctx, "rbac", sa.name)
			if err != nil {
				t.Fatal(err)
			}
			as := c.Clientset(t, cfg)
			if _, err := as.CoreV1().Pods("rbac").List(ctx, metav1.ListOptions{}); err != nil {
				t.Errorf("%s: listing pods, which its Role allows: %v", sa.name, err)
			}
			body, err := as.CoreV1().Pods("rbac").GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(ctx)
			switch {
			case sa.forbidden && !apierrors.IsForbidden(err):
				t.Errorf("%s (a Role without pods/log): GetLogs gave %q, %v; want Forbidden", sa.name, body, err)
			case !sa.forbidden && (err != nil || string(body) != "hello\n"):
				t.Errorf("%s (a Role with pods/log): GetLogs gave %q, %v; want hello", sa.name, body, err)
			}
		}
		if err := c.Apply(ctx, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: typo, namespace: rbac}\ndata: {a: b}\ndatta: {c: d}\n")); err == nil || !strings.Contains(err.Error(), "datta") {
			t.Errorf("applying a misspelt field: %v, want an error naming it", err)
		}
	})

	t.Run("DeploymentConfigMapAndKubeconfig", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		if err := c.Apply(ctx, []byte(deploymentManifests)); err != nil {
			t.Fatal(err)
		}
		// A kubeconfig file, as a soakd process would load it.
		cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig(t, c.AdminConfig()))
		if err != nil {
			t.Fatal(err)
		}
		kc := c.Clientset(t, cfg)
		var pods []corev1.Pod
		if err := waitFor(ctx, 90*time.Second, func() error {
			list, err := kc.CoreV1().Pods("web").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return err
			}
			pods = nil
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					pods = append(pods, p)
				}
			}
			if len(pods) != 2 {
				return fmt.Errorf("%d running pods of 2", len(pods))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if pods[0].Status.PodIP == pods[1].Status.PodIP {
			t.Errorf("two replicas share pod IP %s", pods[0].Status.PodIP)
		}
		for _, p := range pods {
			want := fmt.Sprintf("ip=%s name=%s greeting=hi\nfile: hello from a configmap\n", p.Status.PodIP, p.Name)
			var got string
			err := waitFor(ctx, 10*time.Second, func() error {
				body, err := kc.CoreV1().Pods("web").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
				if got = string(body); err == nil && got != want {
					err = fmt.Errorf("log %q", got)
				}
				return err
			})
			if err != nil {
				t.Errorf("pod %s: %v, want %q", p.Name, err, want)
			}
		}
	})

	t.Run("ReplicasServeOnTheirPodIPs", func(t *testing.T) {
		t.Parallel()
		ctx := t.Context()
		if err := c.Apply(ctx, []byte(listenManifests)); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		if err := waitFor(ctx, 90*time.Second, func() error {
			list, err := cs.CoreV1().Pods("listen").List(ctx, metav1.ListOptions{LabelSelector: "app=listen"})
			if err != nil {
				return err
			}
			pods = nil
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
					pods = append(pods, p)
				}
			}
			if len(pods) != 2 {
				return fmt.Errorf("%d running pods of 2", len(pods))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Timeout: 5 * time.Second}
		for _, p := range pods {
			// Both listen on port 8080, each on its own address.
			var body string
			if err := waitFor(ctx, 30*time.Second, func() error {
				resp, err := client.Get("http://" + net.JoinHostPort(p.Status.PodIP, "8080") + "/")
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				body = string(b)
				return err
			}); err != nil || body != p.Name {
				t.Errorf("GET %s:8080 (pod %s): %q %v, want the pod's name", p.Status.PodIP, p.Name, body, err)
			}
		}
		// The API server's pod proxy refuses loopback pod IPs (it wants a
		// global unicast address): targets are reached by pod IP here.
		res := cs.CoreV1().RESTClient().Get().Namespace("listen").Resource("pods").Name(pods[0].Name + ":8080").SubResource("proxy").Do(ctx)
		var code int
		body, _ := res.StatusCode(&code).Raw()
		if code != http.StatusBadRequest || !strings.Contains(string(body), "address not allowed") {
			t.Errorf("pods/proxy to a loopback pod IP: %d %q, want 400 address not allowed (if the API server now proxies it, update docs/development.md)", code, body)
		}
	})

	t.Run("DeletionStopsTheProcessThenThePod", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "delete")
		ctx := t.Context()
		pod := shPod("stubborn", `trap 'echo got TERM' TERM; echo up; while true; do sleep 0.1; done`)
		one := int64(1)
		pod.Spec.TerminationGracePeriodSeconds = &one
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pid := waitProcess(t, a, ns, "stubborn")
		waitPhase(t, cs, ns, "stubborn", corev1.PodRunning)
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "stubborn", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, 30*time.Second, func() error {
			_, err := cs.CoreV1().Pods(ns).Get(ctx, "stubborn", metav1.GetOptions{})
			if err == nil {
				return errors.New("the pod is still there")
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, 10*time.Second, func() error { return gone(pid) }); err != nil {
			t.Errorf("the deleted pod's process: %v", err)
		}
	})

	t.Run("BackgroundChildEndsWithThePod", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "orphan")
		ctx := t.Context()
		// The shell exits at once; its background child keeps the output
		// pipe open. As in a container, the child ends with the first
		// process and the pod succeeds now, not when the child would end.
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, shPod("orphan", `sleep 120 & echo "child $!"`), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, 20*time.Second, func() error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
			if err == nil && p.Status.Phase != corev1.PodSucceeded {
				err = fmt.Errorf("phase %s", p.Status.Phase)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		var child int
		if _, err := fmt.Sscanf(readLogs(t, cs, ns, "orphan", &corev1.PodLogOptions{}), "child %d", &child); err != nil {
			t.Fatal(err)
		}
		if err := waitFor(ctx, 10*time.Second, func() error { return gone(child) }); err != nil {
			t.Errorf("the background child: %v", err)
		}
	})

	t.Run("EveryContainerRunsWithItsOwnLog", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "two")
		ctx := t.Context()
		pod := shPod("two", "echo from a")
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "b", Image: "busybox", Args: []string{"-c", "echo from b >&2; exit 4"}})
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPhase(t, cs, ns, "two", corev1.PodFailed)
		codes := map[string]int32{}
		for _, st := range p.Status.ContainerStatuses {
			if st.State.Terminated != nil {
				codes[st.Name] = st.State.Terminated.ExitCode
			}
		}
		if len(codes) != 2 || codes["sh"] != 0 || codes["b"] != 4 {
			t.Errorf("exit codes %v, want sh 0 and b 4", codes)
		}
		for container, want := range map[string]string{"sh": "from a\n", "b": "from b\n"} {
			if got := readLogs(t, cs, ns, "two", &corev1.PodLogOptions{Container: container}); got != want {
				t.Errorf("container %s's log %q, want %q", container, got, want)
			}
		}
	})

	t.Run("OnFailureRestarts", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "restart")
		ctx := t.Context()
		pod := shPod("twice", `if [ -f /work/ran ]; then echo second; exit 0; fi; touch /work/ran; echo first; exit 3`)
		pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPhase(t, cs, ns, "twice", corev1.PodSucceeded)
		st := p.Status.ContainerStatuses[0]
		if st.RestartCount != 1 || st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 3 ||
			st.LastTerminationState.Terminated.Reason != "Error" || st.State.Terminated == nil || st.State.Terminated.Reason != "Completed" {
			t.Errorf("status %+v: want restartCount 1, lastState terminated Error exit 3, state terminated Completed", st)
		}
		if got := readLogs(t, cs, ns, "twice", &corev1.PodLogOptions{}); got != "second\n" {
			t.Errorf("log %q, want the second run's", got)
		}
		if got := readLogs(t, cs, ns, "twice", &corev1.PodLogOptions{Previous: true}); got != "first\n" {
			t.Errorf("previous log %q, want the first run's", got)
		}
	})

	t.Run("Evict", func(t *testing.T) {
		t.Parallel()
		ns := namespace(t, c, "evict")
		ctx := t.Context()
		pod := shPod("evicted", "sleep 60")
		pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitProcess(t, a, ns, "evicted")
		if err := a.Evict(ns, "evicted"); err != nil {
			t.Fatal(err)
		}
		p := waitPhase(t, cs, ns, "evicted", corev1.PodFailed)
		if p.Status.Reason != "Evicted" || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("evicted pod: reason %q, restarts %d; want Evicted, 0", p.Status.Reason, p.Status.ContainerStatuses[0].RestartCount)
		}
	})
}

const rbacManifests = `
apiVersion: v1
kind: Namespace
metadata: {name: rbac}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: no-logs, namespace: rbac}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: logs, namespace: rbac}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pods-only, namespace: rbac}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pods-and-logs, namespace: rbac}
rules:
- {apiGroups: [""], resources: [pods, pods/log], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: no-logs, namespace: rbac}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pods-only}
subjects: [{kind: ServiceAccount, name: no-logs, namespace: rbac}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: logs, namespace: rbac}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pods-and-logs}
subjects: [{kind: ServiceAccount, name: logs, namespace: rbac}]
`

// listenManifests run two replicas of this test binary as an HTTP server
// on $(POD_IP):8080 (TestKubeHelperServe).
const listenManifests = `
apiVersion: v1
kind: Namespace
metadata: {name: listen}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: listen, namespace: listen}
spec:
  replicas: 2
  selector: {matchLabels: {app: listen}}
  template:
    metadata: {labels: {app: listen}}
    spec:
      containers:
      - name: serve
        image: kubetest-helper
        args: [-test.run=^TestKubeHelperServe$]
        ports: [{containerPort: 8080}]
        env:
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: KUBETEST_HELPER_LISTEN, value: "$(POD_IP):8080"}
`

// TestKubeHelperServe is not a test: it is the server TestKube's pods run
// (this test binary, re-executed by the agent), answering every request
// with its HOSTNAME (the pod's name) on $KUBETEST_HELPER_LISTEN, and
// stopping by itself after two minutes should nothing stop it before.
func TestKubeHelperServe(t *testing.T) {
	addr := os.Getenv("KUBETEST_HELPER_LISTEN")
	if addr == "" {
		t.Skip("the server TestKube's pods run, not a test of its own")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, os.Getenv("HOSTNAME"))
	})}
	stop := time.AfterFunc(2*time.Minute, func() { _ = srv.Close() })
	defer stop.Stop()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		t.Fatal(err)
	}
}

const deploymentManifests = `
apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: web}
data:
  greeting: hi
  msg.txt: hello from a configmap
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.example/library/busybox:1.37
        command: [/bin/sh, -c, 'echo "ip=$(POD_IP) name=$(POD_NAME) greeting=$GREETING"; echo "file: $(cat /etc/web/msg.txt)"; exec sleep 300']
        env:
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
        - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
        - {name: GREETING, valueFrom: {configMapKeyRef: {name: web, key: greeting}}}
        volumeMounts: [{name: cfg, mountPath: /etc/web}]
      volumes: [{name: cfg, configMap: {name: web}}]
`

// namespace creates namespace name for t's objects and waits for its
// default service account, without which a pod is not admitted.
func namespace(t *testing.T, c *Cluster, name string) string {
	t.Helper()
	if err := c.Apply(t.Context(), []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: "+name+"}\n")); err != nil {
		t.Fatal(err)
	}
	cs := c.Clientset(t, c.AdminConfig())
	if err := waitFor(t.Context(), 30*time.Second, func() error {
		_, err := cs.CoreV1().ServiceAccounts(name).Get(t.Context(), "default", metav1.GetOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return name
}

// shPod is a pod running script in busybox's /bin/sh, restartPolicy Never.
func shPod(name, script string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "sh", Image: "busybox", Command: []string{"/bin/sh", "-c", script}}},
	}}
}

// indexedJob is an Indexed Job of n pods (completions = parallelism = n,
// backoffLimit 0, restartPolicy Never) running script in /bin/sh.
func indexedJob(name string, n int32, script string) *batchv1.Job {
	mode := batchv1.IndexedCompletion
	zero := int32(0)
	pod := shPod("", script)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions: &n, Parallelism: &n, CompletionMode: &mode, BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{Spec: pod.Spec},
		},
	}
}

// jobPods waits until job has n pods and returns them by completion index.
func jobPods(t *testing.T, cs kubernetes.Interface, ns, job string, n int) map[string]corev1.Pod {
	t.Helper()
	var out map[string]corev1.Pod
	if err := waitFor(t.Context(), 60*time.Second, func() error {
		pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		if err != nil {
			return err
		}
		out = map[string]corev1.Pod{}
		for _, p := range pods.Items {
			out[p.Annotations[batchv1.JobCompletionIndexAnnotation]] = p
		}
		if len(out) != n {
			return fmt.Errorf("job %s has %d pods of %d", job, len(out), n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// jobCondition waits until job has condition want, True.
func jobCondition(t *testing.T, cs kubernetes.Interface, ns, name string, want batchv1.JobConditionType) batchv1.JobCondition {
	t.Helper()
	var found batchv1.JobCondition
	if err := waitFor(t.Context(), 90*time.Second, func() error {
		j, err := cs.BatchV1().Jobs(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == want && c.Status == corev1.ConditionTrue {
				found = c
				return nil
			}
		}
		return fmt.Errorf("job %s: conditions %+v, want %s", name, j.Status.Conditions, want)
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// waitPhase waits until pod ns/name is in one of phases.
func waitPhase(t *testing.T, cs kubernetes.Interface, ns, name string, phases ...corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	if err := waitFor(t.Context(), 60*time.Second, func() error {
		var err error
		p, err = cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return nil
			}
		}
		return fmt.Errorf("pod %s: phase %s, want %v; status %+v", name, p.Status.Phase, phases, p.Status)
	}); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitProcess waits until pod ns/name's process runs and returns its pid.
func waitProcess(t *testing.T, a *Agent, ns, name string) int {
	t.Helper()
	var pid int
	if err := waitFor(t.Context(), 60*time.Second, func() error {
		var ok bool
		if pid, ok = a.Process(ns, name); !ok {
			return fmt.Errorf("pod %s/%s has no process", ns, name)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone says whether process pid has ended: no such process, or a zombie
// (killed, not yet reaped by whoever inherited it).
func gone(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	// The state follows the command name's closing parenthesis.
	if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i:]), ") Z") {
		return nil
	}
	return fmt.Errorf("process %d still runs: %s", pid, b)
}

// readLogs reads pod ns/name's log through the API server to its end.
func readLogs(t *testing.T, cs kubernetes.Interface, ns, name string, opts *corev1.PodLogOptions) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	stream, err := cs.CoreV1().Pods(ns).GetLogs(name, opts).Stream(ctx)
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", ns, name, err)
	}
	defer stream.Close()
	b, err := io.ReadAll(stream)
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", ns, name, err)
	}
	return string(b)
}
