package kubetest

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// indexedJob is an Indexed Job of n pods running script in /bin/sh.
func indexedJob(name string, n int32, script string) *batchv1.Job {
	mode := batchv1.IndexedCompletion
	zero := int32(0)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions: &n, Parallelism: &n, CompletionMode: &mode, BackoffLimit: &zero,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "sh", Image: "busybox:1.37", Command: []string{"/bin/sh", "-c", script}}},
			}},
		},
	}
}

// jobPods waits until job has n pods and returns them by completion index.
func jobPods(t *testing.T, cs kubernetes.Interface, job string, n int) map[string]corev1.Pod {
	t.Helper()
	var out map[string]corev1.Pod
	err := waitFor(t.Context(), 60*time.Second, func() error {
		pods, err := cs.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{LabelSelector: "job-name=" + job})
		if err != nil {
			return err
		}
		out = map[string]corev1.Pod{}
		for _, p := range pods.Items {
			out[p.Annotations[batchv1.JobCompletionIndexAnnotation]] = p
		}
		if len(out) != n {
			return fmt.Errorf("%d pods of %d", len(out), n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func jobCondition(t *testing.T, cs kubernetes.Interface, name string, want batchv1.JobConditionType) *batchv1.JobCondition {
	t.Helper()
	var found *batchv1.JobCondition
	err := waitFor(t.Context(), 60*time.Second, func() error {
		j, err := cs.BatchV1().Jobs("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == want && c.Status == corev1.ConditionTrue {
				found = &c
				return nil
			}
		}
		return fmt.Errorf("job %s conditions %+v", name, j.Status.Conditions)
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestIndexedJobRunsOnTheAgent: the real Job controller creates the three
// pods of an Indexed Job, the agent binds and runs them with their
// completion index from the downward API, the Job completes, and each
// pod's log is read through the API server, also after a dropped stream.
func TestIndexedJobRunsOnTheAgent(t *testing.T) {
	c := Start(t)
	c.StartAgent(t, AgentOptions{Images: map[string]string{"busybox": "/bin/sh"}})
	cs := c.Clientset(t, c.AdminConfig())
	ctx := t.Context()
	if _, err := cs.BatchV1().Jobs("default").Create(ctx, indexedJob("three", 3, `for i in 1 2 3; do echo "index=$JOB_COMPLETION_INDEX line=$i"; done`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, cs, "three", batchv1.JobComplete)
	for idx, p := range jobPods(t, cs, "three", 3) {
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s phase %s", p.Name, p.Status.Phase)
		}
		body, err := cs.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		want := fmt.Sprintf("index=%s line=1\nindex=%s line=2\nindex=%s line=3\n", idx, idx, idx)
		if err != nil || string(body) != want {
			t.Errorf("pod %s (index %s) log %q %v, want %q", p.Name, idx, body, err, want)
		}
	}
}

// TestDroppedLogStreamResumes: a follow stream the agent drops mid-run
// ends early; following again from the last timestamp (sinceTime) with
// timestamps gets the rest, and together they hold every line once.
func TestDroppedLogStreamResumes(t *testing.T) {
	c := Start(t)
	a := c.StartAgent(t, AgentOptions{Images: map[string]string{"busybox": "/bin/sh"}})
	cs := c.Clientset(t, c.AdminConfig())
	ctx := t.Context()
	if _, err := cs.BatchV1().Jobs("default").Create(ctx, indexedJob("slow", 1, `i=0; while [ $i -lt 30 ]; do echo "line $i"; i=$((i+1)); sleep 0.1; done`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := jobPods(t, cs, "slow", 1)["0"]
	if err := waitFor(ctx, 30*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			err = fmt.Errorf("phase %s", p.Status.Phase)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	read := func(since *metav1.Time, dropAfter int) []string {
		stream, err := cs.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true, Timestamps: true, SinceTime: since}).Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stream.Close()
		var lines []string
		sc := bufio.NewScanner(stream)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if len(lines) == dropAfter {
				if err := a.DropLogStreams("default", pod.Name); err != nil {
					t.Fatal(err)
				}
			}
		}
		return lines
	}
	first := read(nil, 5)
	if len(first) >= 30 || len(first) < 5 {
		t.Fatalf("the dropped stream held %d lines, want it cut short", len(first))
	}
	ts, _, _ := strings.Cut(first[len(first)-1], " ")
	last, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		t.Fatal(err)
	}
	rest := read(&metav1.Time{Time: last}, -1) // whole seconds: lines of that second again
	seen := map[string]bool{}
	var texts []string
	for _, l := range append(first, rest...) {
		if !seen[l] {
			seen[l] = true
			_, text, _ := strings.Cut(l, " ")
			texts = append(texts, text)
		}
	}
	if len(texts) != 30 || texts[0] != "line 0" || texts[29] != "line 29" {
		t.Fatalf("resumed log: %d distinct lines %q", len(texts), texts)
	}
}

// TestKilledPodFailsTheJob: a pod killed as by the OOM killer is Failed,
// its container terminated with reason OOMKilled and exit 137, and the Job
// (backoffLimit 0) fails; an unschedulable pod stays Pending with the
// scheduler's condition.
func TestKilledPodFailsTheJob(t *testing.T) {
	c := Start(t)
	a := c.StartAgent(t, AgentOptions{Images: map[string]string{"busybox": "/bin/sh"}, Unschedulable: func(p *corev1.Pod) bool {
		return p.Labels["job-name"] == "never"
	}})
	cs := c.Clientset(t, c.AdminConfig())
	ctx := t.Context()
	for _, j := range []*batchv1.Job{indexedJob("oom", 1, "sleep 30"), indexedJob("never", 1, "true")} {
		if _, err := cs.BatchV1().Jobs("default").Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pod := jobPods(t, cs, "oom", 1)["0"]
	if err := waitFor(ctx, 30*time.Second, func() error {
		_, ok := a.Process("default", pod.Name)
		if !ok {
			return fmt.Errorf("not started")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Kill("default", pod.Name, "OOMKilled"); err != nil {
		t.Fatal(err)
	}
	jobCondition(t, cs, "oom", batchv1.JobFailed)
	p, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if err == nil {
		st := p.Status.ContainerStatuses
		if p.Status.Phase != corev1.PodFailed || len(st) != 1 || st[0].State.Terminated == nil || st[0].State.Terminated.Reason != "OOMKilled" || st[0].State.Terminated.ExitCode != 137 {
			t.Errorf("killed pod: phase %s statuses %+v", p.Status.Phase, st)
		}
	}
	never := jobPods(t, cs, "never", 1)["0"]
	if err := waitFor(ctx, 10*time.Second, func() error {
		p, err := cs.CoreV1().Pods("default").Get(ctx, never.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable && p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
				return nil
			}
		}
		return fmt.Errorf("pod %s: %+v", p.Name, p.Status)
	}); err != nil {
		t.Error(err)
	}
}
