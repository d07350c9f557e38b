package drivers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/kubeclient"
	"github.com/soakd/soakd/workloads"
)

// Labels and paths of the objects the Kubernetes backend creates.
const (
	labelRun   = "soakd.io/run"
	labelPhase = "soakd.io/phase"
	labelApp   = "app.kubernetes.io/name"
	appDriver  = "soakd-driver"
	// specDir is where a driver pod finds its spec (the ConfigMap's
	// spec.json).
	specDir = "/etc/soakd"
	// maxSpecBytes is the largest phase spec the backend ships: a
	// ConfigMap holds at most 1 MiB, less its other keys and metadata.
	maxSpecBytes = 1000 * 1024
	// pollEvery is how often the backend lists the Job's pods: a pod that
	// fails is seen within it (plus the kubelet's own report).
	pollEvery = 500 * time.Millisecond
)

// Kubernetes runs the drivers of each phase as the pods of one Indexed Job
// (completions = parallelism = N, backoffLimit 0, restartPolicy Never),
// each pod `soakd drive --shard $(JOB_COMPLETION_INDEX)/N` with its spec
// from the phase's ConfigMap, and reads what the drivers send from their
// logs (docs/kubernetes.md).
type Kubernetes struct {
	Log    *zap.Logger
	Client kubernetes.Interface
	Config config.KubernetesDriversConfig
	// Run is the run's id, on every object's labels.
	Run string
	// Target are the `soakd drive` flags naming the target's URLs, which
	// the pods must reach.
	Target []string
}

// NewClient connects to the cluster that kc names: its kubeconfig file
// (empty: $KUBECONFIG or ~/.kube/config, else the in-cluster service
// account) and context.
func NewClient(kc config.KubernetesDriversConfig) (kubernetes.Interface, error) {
	_, cs, err := kubeclient.Connect(kc.Kubeconfig, kc.Context, "kubernetes_drivers")
	return cs, err
}

// PodTarget is the `soakd drive` flags target (flag, URL pairs) as the
// pods get them: each URL's host replaced by host when it is set. A URL
// whose host is unspecified (0.0.0.0, ::) is refused without host, since
// in a pod it would name the pod itself.
func PodTarget(target []string, host string) ([]string, error) {
	out := slices.Clone(target)
	for i := 1; i < len(out); i += 2 {
		u, err := url.Parse(out[i])
		if err != nil || u.Host == "" {
			continue
		}
		if host != "" {
			if port := u.Port(); port != "" {
				u.Host = net.JoinHostPort(host, port)
			} else {
				u.Host = host
			}
			out[i] = u.String()
			continue
		}
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsUnspecified() {
			return nil, fmt.Errorf("the target's URL %s (%s) cannot be reached from a driver pod: set kubernetes_drivers.target_host to the name pods reach it by (its Service)", out[i], out[i-1])
		}
	}
	return out, nil
}

// StartMargin is ready_timeout: the pods' time to be scheduled, pull the
// image and start, also for one driver, so that its load starts at a
// known instant rather than whenever its pod came up.
func (k Kubernetes) StartMargin(int) time.Duration { return k.Config.ReadyTimeout }

// SeparateMachines: each driver is a pod, with its own CPUs (its limit,
// which its GOMAXPROCS follows), wherever it is scheduled.
func (Kubernetes) SeparateMachines() bool { return true }

// Open creates the phase's Job and then its ConfigMap (owned by the Job,
// so deleting the Job deletes both) and starts watching the Job's pods.
func (k Kubernetes) Open(ctx context.Context, spec workloads.Phase, n int) (Phase, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the phase spec: %w", err)
	}
	if len(body) > maxSpecBytes {
		return nil, fmt.Errorf("phase %s: its spec is %d bytes (CSV data included), more than a ConfigMap can ship (%d): use fewer CSV rows, or drivers.backend: local", spec.Name, len(body), maxSpecBytes)
	}
	if ops := envHeaderOps(spec); len(ops) > 0 {
		return nil, fmt.Errorf("phase %s: operations %s take header values from soakd's environment (headers_env), which the driver pods do not have: give the values in headers:, or use drivers.backend: local", spec.Name, strings.Join(ops, ", "))
	}
	name := jobName()
	job := jobSpec(name, k.Run, spec, n, k.Config, k.Target)
	jobs := k.Client.BatchV1().Jobs(k.Config.Namespace)
	created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("phase %s: cannot create the drivers' Job %s/%s: %w", spec.Name, k.Config.Namespace, name, err)
	}
	p := &kubePhase{k: k, spec: spec, n: n, job: name, changed: make(chan struct{}), pods: map[int]podView{}}
	cm := configMapSpec(name, k.Run, spec, n, body, created)
	if _, err := k.Client.CoreV1().ConfigMaps(k.Config.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		_ = p.deleteJob(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("phase %s: cannot create the drivers' ConfigMap %s/%s: %w", spec.Name, k.Config.Namespace, name, err)
	}
	k.Log.Info("drivers' Job created", zap.String("phase", spec.Name), zap.String("job", k.Config.Namespace+"/"+name), zap.Int("shards", n), zap.Time("start_at", spec.StartAt))
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stopWatch = stop
	p.wg.Go(func() { p.watch(wctx) })
	return p, nil
}

// envHeaderOps names the phase's operations with headers_env.
func envHeaderOps(spec workloads.Phase) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(spec.Operations)) {
		if len(spec.Operations[name].HeadersEnv) > 0 {
			out = append(out, string(name))
		}
	}
	return out
}

// jobName is a new Job's name: soakd-drive- and 10 random hex digits
// (the phase and run are labels: a name must stay a short DNS label).
func jobName() string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	return "soakd-drive-" + hex.EncodeToString(b)
}

// labelValue is s as a label value: at most 63 of [A-Za-z0-9._-], starting
// and ending alphanumeric ("graphql-load#2" is "graphql-load_2").
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	v := strings.Trim(string(b[:min(len(b), 63)]), "._-")
	return v
}

// jobSpec is the Indexed Job of n drivers of spec: the pure shape the
// backend creates (TestJobSpec checks every field that matters).
func jobSpec(name, run string, spec workloads.Phase, n int, kc config.KubernetesDriversConfig, target []string) *batchv1.Job {
	labels := map[string]string{labelApp: appDriver, labelRun: labelValue(run), labelPhase: labelValue(spec.Name)}
	count := int32(n)
	zero := int32(0)
	mode := batchv1.IndexedCompletion
	ttl := int32(kc.TTL / time.Second)
	grace := int64((spec.RequestTimeout + driverGrace) / time.Second)
	args := append(append([]string{"drive"}, target...), "--spec", specDir+"/spec.json", "--log-format", "json")
	if n > 1 {
		args = append(args, "--shard", "$(JOB_COMPLETION_INDEX)/"+strconv.Itoa(n))
	}
	no, yes := false, true
	c := corev1.Container{
		Name: "drive", Image: kc.Image, ImagePullPolicy: corev1.PullPolicy(kc.ImagePullPolicy), Args: args,
		VolumeMounts: []corev1.VolumeMount{{Name: "spec", MountPath: specDir, ReadOnly: true}},
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, RunAsNonRoot: &yes,
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
	}
	if kc.CPU != "" || kc.Memory != "" {
		rl := corev1.ResourceList{}
		if kc.CPU != "" {
			rl[corev1.ResourceCPU] = resource.MustParse(kc.CPU)
		}
		if kc.Memory != "" {
			rl[corev1.ResourceMemory] = resource.MustParse(kc.Memory)
		}
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl}
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{"soakd.io/phase-name": spec.Name, "soakd.io/start-at": spec.StartAt.Format(time.RFC3339Nano)}},
		Spec: batchv1.JobSpec{
			Completions: &count, Parallelism: &count, CompletionMode: &mode, BackoffLimit: &zero, TTLSecondsAfterFinished: &ttl,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: kc.ServiceAccount, AutomountServiceAccountToken: &no,
					TerminationGracePeriodSeconds: &grace, NodeSelector: maps.Clone(kc.NodeSelector),
					Containers: []corev1.Container{c},
					Volumes:    []corev1.Volume{{Name: "spec", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}},
				},
			},
		},
	}
	if spec.Duration > 0 {
		// Bound the Job should soakd die: the wait for the start, the
		// phase's cap, a request's timeout and the grace, and a minute.
		d := int64((kc.ReadyTimeout + spec.Duration + spec.RequestTimeout + driverGrace + time.Minute) / time.Second)
		job.Spec.ActiveDeadlineSeconds = &d
	}
	return job
}

// configMapSpec is the phase's ConfigMap, owned by job: the spec the pods
// read, with the run, the shard count and the start instant beside it for
// whoever inspects the cluster.
func configMapSpec(name, run string, spec workloads.Phase, n int, body []byte, job *batchv1.Job) *corev1.ConfigMap {
	yes := true
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: job.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Data: map[string]string{"spec.json": string(body), "run": run, "shards": strconv.Itoa(n), "start_at": spec.StartAt.Format(time.RFC3339Nano)},
	}
}

// podView is what the backend knows of one shard's pod.
type podView struct {
	name    string
	phase   corev1.PodPhase
	running bool // its container has started
	// fatal is why the pod can no longer deliver its shard (unschedulable,
	// evicted, OOM-killed, restarted, replaced); empty while it can.
	fatal string
	// ended: its container terminated (exit 0 too).
	ended bool
}

// kubePhase is one phase's Job.
type kubePhase struct {
	k    Kubernetes
	spec workloads.Phase
	n    int
	job  string

	mu      sync.Mutex
	pods    map[int]podView
	listErr error
	changed chan struct{} // closed and replaced when pods changes

	stopWatch context.CancelFunc
	wg        sync.WaitGroup
}

// watch lists the Job's pods every pollEvery until ctx ends and records
// what each shard's pod says.
func (p *kubePhase) watch(ctx context.Context) {
	for {
		list, err := p.k.Client.CoreV1().Pods(p.k.Config.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + p.job})
		p.mu.Lock()
		p.listErr = err
		if err == nil {
			p.pods = viewPods(list.Items, p.pods)
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollEvery):
		}
	}
}

// viewPods reduces the Job's pods to one view per completion index; prev
// is the last view, so a pod replaced by another of its index is fatal.
func viewPods(pods []corev1.Pod, prev map[int]podView) map[int]podView {
	out := map[int]podView{}
	for _, pod := range pods {
		i, err := strconv.Atoi(pod.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil {
			continue
		}
		v := podView{name: pod.Name, phase: pod.Status.Phase, fatal: podFatal(&pod)}
		for _, cs := range pod.Status.ContainerStatuses {
			v.running = v.running || cs.State.Running != nil || cs.State.Terminated != nil
			v.ended = v.ended || cs.State.Terminated != nil
		}
		if old, ok := out[i]; ok && old.name != v.name {
			v.fatal = fmt.Sprintf("two pods (%s, %s) run the same shard: a pod was replaced", old.name, v.name)
		}
		if old, ok := prev[i]; ok && old.name != v.name && v.fatal == "" {
			v.fatal = fmt.Sprintf("pod %s was replaced by %s: a shard's driver restarted from the beginning", old.name, v.name)
		}
		out[i] = v
	}
	return out
}

// podFatal is why pod can no longer deliver its shard's load, or "": the
// decision every abort rests on (TestPodFatal).
func podFatal(pod *corev1.Pod) string {
	if pod.Status.Reason == "Evicted" {
		return "evicted: " + pod.Status.Message
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return "unschedulable: " + c.Message
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.RestartCount > 0 {
			return fmt.Sprintf("its container restarted %d time(s): the driver would start its share again", cs.RestartCount)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("its container terminated: %s (exit %d)%s", t.Reason, t.ExitCode, suffix(t.Message))
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff":
				return fmt.Sprintf("its container cannot start: %s%s", w.Reason, suffix(w.Message))
			}
		}
	}
	if pod.Status.Phase == corev1.PodFailed {
		return "failed: " + pod.Status.Reason + suffix(pod.Status.Message)
	}
	return ""
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// view returns shard i's pod view, the list error, and a channel closed at
// the next change.
func (p *kubePhase) view(i int) (podView, bool, error, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.pods[i]
	return v, ok, p.listErr, p.changed
}

// Shard follows shard sh's pod: it waits for the pod to run (failing the
// shard when it cannot by the start instant), follows its log to the
// driver's result, resumes a dropped stream where it ended, and on ctx's
// end deletes the pod gracefully (SIGTERM: the driver then sends its
// partial result) and reads on to that result.
func (p *kubePhase) Shard(ctx context.Context, sh workloads.Shard, progress func(workloads.Progress), window func(workloads.SecondWindow)) (workloads.Result, Usage, error) {
	i := sh.Index
	who := fmt.Sprintf("shard %d of %d", i, p.n)
	u := Usage{}
	pod, err := p.awaitRunning(ctx, i, who)
	if pod != "" {
		u.Pod = p.k.Config.Namespace + "/" + pod
	}
	if err != nil {
		return workloads.Result{}, u, err
	}
	started := time.Now()
	f := &follower{progress: progress, window: window, log: p.k.Log.With(zap.String("phase", p.spec.Name), zap.String("source", "driver"), zap.String("pod", u.Pod)), lastSeq: -1}
	stopped := false
	var deadline <-chan time.Time
	for attempt := 0; ; attempt++ {
		streamCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan error, 1)
		go func() { done <- p.follow(streamCtx, pod, f) }()
		var streamErr error
	wait:
		for {
			select {
			case streamErr = <-done:
				break wait
			case <-ctx.Done():
				if !stopped {
					stopped = true
					p.stopPod(pod)
					deadline = time.After(p.spec.RequestTimeout + driverGrace + 10*time.Second)
				}
			case <-deadline:
				cancel()
				streamErr = <-done
				cancel()
				u.Wall = time.Since(started)
				return workloads.Result{}, u, fmt.Errorf("pod %s did not send its partial result within %s of being stopped", pod, p.spec.RequestTimeout+driverGrace+10*time.Second)
			}
		}
		cancel()
		u.Wall = time.Since(started)
		if f.result != nil {
			u.PID = f.result.DriverPID
			return *f.result, u, nil
		}
		if f.driveErr != "" {
			return workloads.Result{}, u, fmt.Errorf("driver failed: %s", f.driveErr)
		}
		// The stream ended without a result: the container ended (read
		// why), or the stream was dropped (follow again from where it
		// ended, at most a few times in a row without progress).
		v, _, _, _ := p.view(i)
		if v.fatal != "" {
			return workloads.Result{}, u, fmt.Errorf("pod %s %s%s", pod, v.fatal, f.tail())
		}
		if v.ended || apierrors.IsNotFound(streamErr) {
			return workloads.Result{}, u, fmt.Errorf("pod %s ended without a result%s", pod, f.tail())
		}
		if f.progressSince(attempt) == 0 && attempt >= 10 {
			return workloads.Result{}, u, fmt.Errorf("cannot follow pod %s's log: %v", pod, streamErr)
		}
		p.k.Log.Info("the driver's log stream ended early; following it again from its last line", zap.String("pod", u.Pod), zap.Error(streamErr), zap.Int("attempt", attempt+1))
		select {
		case <-time.After(min(time.Duration(attempt+1)*200*time.Millisecond, 2*time.Second)):
		case <-ctx.Done():
		}
	}
}

// awaitRunning waits until shard i's pod has started its container, or
// fails: the pod cannot run (podFatal), or it has not started by the
// phase's start instant.
func (p *kubePhase) awaitRunning(ctx context.Context, i int, who string) (string, error) {
	deadline := time.NewTimer(time.Until(p.spec.StartAt))
	defer deadline.Stop()
	for {
		v, ok, listErr, changed := p.view(i)
		switch {
		case ok && v.fatal != "":
			return v.name, fmt.Errorf("%s: pod %s %s", who, v.name, v.fatal)
		case ok && v.running:
			return v.name, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return v.name, fmt.Errorf("%s: stopped before its pod started: %w", who, context.Cause(ctx))
		case <-deadline.C:
			switch {
			case !ok && listErr != nil:
				return "", fmt.Errorf("%s: cannot list the Job's pods: %w", who, listErr)
			case !ok:
				return "", fmt.Errorf("%s: the Job %s/%s had no pod for it by the start instant (kubernetes_drivers.ready_timeout %s)", who, p.k.Config.Namespace, p.job, p.k.Config.ReadyTimeout)
			}
			return v.name, fmt.Errorf("%s: pod %s was not running by the start instant (kubernetes_drivers.ready_timeout %s): %s", who, v.name, p.k.Config.ReadyTimeout, p.describe(ctx, v.name))
		}
	}
}

// describe says where a pod stands: its phase and the reason of its
// waiting container or of a false condition.
func (p *kubePhase) describe(ctx context.Context, name string) string {
	pod, err := p.k.Client.CoreV1().Pods(p.k.Config.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	parts := []string{string(pod.Status.Phase)}
	for _, c := range pod.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Reason != "" {
			parts = append(parts, fmt.Sprintf("%s=%s %s", c.Type, c.Reason, c.Message))
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			parts = append(parts, "container "+w.Reason+suffix(w.Message))
		}
	}
	return strings.Join(parts, ", ")
}

// stopPod deletes pod with its grace period: the kubelet sends SIGTERM,
// on which the driver stops and sends its partial result.
func (p *kubePhase) stopPod(pod string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.k.Client.CoreV1().Pods(p.k.Config.Namespace).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		p.k.Log.Warn("cannot stop the driver's pod", zap.String("pod", pod), zap.Error(err))
	}
}

// follow streams pod's log (with timestamps, from where f last read) into
// f until the stream ends.
func (p *kubePhase) follow(ctx context.Context, pod string, f *follower) error {
	opts := &corev1.PodLogOptions{Container: "drive", Follow: true, Timestamps: true}
	if !f.lastTS.IsZero() {
		// Whole seconds: the lines of that second come again, and f
		// drops those it has.
		since := metav1.NewTime(f.lastTS)
		opts.SinceTime = &since
	}
	stream, err := p.k.Client.CoreV1().Pods(p.k.Config.Namespace).GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return err
	}
	defer stream.Close()
	r := bufio.NewReaderSize(stream, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if ferr := f.line(line); ferr != nil {
				return ferr
			}
		}
		if err != nil {
			return err
		}
	}
}

// Close stops watching and deletes the Job (its pods and ConfigMap go with
// it, by the garbage collector).
func (p *kubePhase) Close(ctx context.Context) error {
	p.stopWatch()
	p.wg.Wait()
	return p.deleteJob(ctx)
}

func (p *kubePhase) deleteJob(ctx context.Context) error {
	bg := metav1.DeletePropagationBackground
	err := p.k.Client.BatchV1().Jobs(p.k.Config.Namespace).Delete(ctx, p.job, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cannot delete the drivers' Job %s/%s: %w", p.k.Config.Namespace, p.job, err)
	}
	return nil
}

// follower turns a driver pod's log lines (stdout and stderr interleaved,
// each prefixed with the kubelet's RFC 3339 timestamp) into its messages,
// exactly once across resumed streams: a line older than the last one read
// is dropped, and one of the same instant is dropped when it was read.
type follower struct {
	progress func(workloads.Progress)
	window   func(workloads.SecondWindow)
	log      *zap.Logger

	lastTS   time.Time
	atLast   map[string]bool // lines read with timestamp lastTS
	lastSeq  int64
	lines    int // lines delivered
	mark     int // lines at the last progressSince
	result   *workloads.Result
	driveErr string
	recent   []string // the last few log lines, for an error's context
}

// line handles one timestamped log line.
func (f *follower) line(raw []byte) error {
	ts, text, ok := bytes.Cut(bytes.TrimRight(raw, "\r\n"), []byte(" "))
	if !ok {
		return fmt.Errorf("a log line without the kubelet's timestamp: %q", raw)
	}
	at, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return fmt.Errorf("a log line with a bad timestamp %q: %w", ts, err)
	}
	switch {
	case at.Before(f.lastTS):
		return nil
	case at.Equal(f.lastTS):
		if f.atLast[string(text)] {
			return nil
		}
	default:
		f.lastTS, f.atLast = at, map[string]bool{}
	}
	f.atLast[string(text)] = true
	f.lines++
	var m workloads.Message
	if json.Unmarshal(text, &m) != nil || m.Type == "" {
		// The driver's own log (stderr, JSON by --log-format json).
		f.log.Debug(string(text))
		f.recent = append(f.recent[max(len(f.recent)-4, 0):], string(text))
		return nil
	}
	if err := workloads.CheckMessage(m); err != nil {
		return fmt.Errorf("invalid driver message: %w", err)
	}
	switch m.Type {
	case workloads.MessageProgress:
		if f.progress != nil {
			f.progress(*m.Progress)
		}
	case workloads.MessageWindow:
		if m.Window.Seq <= f.lastSeq {
			return nil // read before the stream was resumed
		}
		f.lastSeq = m.Window.Seq
		if f.window != nil {
			f.window(*m.Window)
		}
	case workloads.MessageResult:
		f.result = m.Result
	case workloads.MessageError:
		f.driveErr = m.Error
	}
	return nil
}

// progressSince is how many lines arrived since the last call (attempt 0
// resets the count).
func (f *follower) progressSince(attempt int) int {
	if attempt == 0 {
		f.mark = 0
	}
	n := f.lines - f.mark
	f.mark = f.lines
	return n
}

// tail is the driver's last log lines, for an error.
func (f *follower) tail() string {
	if len(f.recent) == 0 {
		return ""
	}
	return "; its last log lines: " + strings.Join(f.recent, " | ")
}
