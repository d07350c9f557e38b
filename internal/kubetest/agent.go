package kubetest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/cert"
)

// NodeName is the agent's node.
const NodeName = "kubetest-node"

// AgentOptions configure an Agent.
type AgentOptions struct {
	// Images maps an image, without its tag ("soakd" for
	// "ghcr.io/x/soakd:v1" is matched by its last path element too), to
	// the local executable that is its entrypoint: a container's command
	// (or, without one, its args alone) is run with that executable as
	// argv[0]'s program and the command's first element dropped when it is
	// the image's entrypoint path (an absolute path such as
	// /usr/local/bin/soakd).
	Images map[string]string
	// Unschedulable, when it returns true for a pod, leaves the pod
	// Pending with the condition PodScheduled=False, reason Unschedulable,
	// as kube-scheduler would when no node fits.
	Unschedulable func(*corev1.Pod) bool
}

// Agent is the test node: it registers a Node, binds pending pods to it,
// runs each pod's first container as a local process and reports its
// status as a kubelet does, and serves the container's output (stdout and
// stderr, line by line, timestamped) on the kubelet's log endpoint over
// TLS, where the API server's pods/log fetches it.
type Agent struct {
	cs   kubernetes.Interface
	opts AgentOptions
	dir  string
	srv  *http.Server
	port int

	mu     sync.Mutex
	pods   map[string]*podRun // by namespace/name
	nextIP int
	wg     sync.WaitGroup
}

// podRun is one pod the agent runs.
type podRun struct {
	key, uid string
	ip       string
	cmd      *exec.Cmd
	logs     *logBuffer
	started  time.Time
	exited   chan struct{}
	exitCode int
	// killReason is the terminated reason a fault injection chose
	// (OOMKilled, Evicted, …); empty: the process's own exit.
	killReason string
	restarts   int32
	reported   bool // the final status was written
}

// StartAgent starts the node agent on c; it is stopped (every process it
// started killed and awaited) in t's cleanup.
func (c *Cluster) StartAgent(t testing.TB, opts AgentOptions) *Agent {
	t.Helper()
	cs := c.Clientset(t, c.AdminConfig())
	a := &Agent{cs: cs, opts: opts, dir: t.TempDir(), pods: map[string]*podRun{}, nextIP: 2}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	a.port = l.Addr().(*net.TCPAddr).Port
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", a.serveLogs)
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	a.wg.Go(func() { _ = a.srv.Serve(l) })
	ctx, cancel := context.WithCancel(context.Background())
	if err := a.register(t.Context()); err != nil {
		cancel()
		t.Fatal(err)
	}
	a.wg.Go(func() { a.loop(ctx) })
	t.Cleanup(func() {
		cancel()
		a.killAll()
		_ = a.srv.Close()
		a.wg.Wait()
	})
	return a
}

// register creates the Node, Ready, with the log endpoint's port.
func (a *Agent) register(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{"kubernetes.io/hostname": NodeName}}}
	n, err := a.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("cannot register the node: %w", err)
	}
	n.Status = a.nodeStatus()
	_, err = a.cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func (a *Agent) nodeStatus() corev1.NodeStatus {
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
	now := metav1.Now()
	return corev1.NodeStatus{
		Capacity: capacity, Allocatable: capacity, Phase: corev1.NodeRunning,
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: NodeName}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(a.port)}},
		NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: KubernetesVersion, OperatingSystem: "linux", Architecture: "amd64"},
	}
}

// loop reconciles every pod every 100 ms until ctx ends: polling keeps
// the agent simple, and a tenth of a second is well inside the seconds a
// test allows for a status to show.
func (a *Agent) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		pods, err := a.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range pods.Items {
			a.reconcile(ctx, &pods.Items[i])
		}
	}
}

func (a *Agent) reconcile(ctx context.Context, p *corev1.Pod) {
	key := p.Namespace + "/" + p.Name
	a.mu.Lock()
	run := a.pods[key]
	if run != nil && run.uid != string(p.UID) {
		run = nil // a new pod of the same name
	}
	a.mu.Unlock()
	switch {
	case p.DeletionTimestamp != nil:
		a.terminate(ctx, p, run)
	case p.Spec.NodeName == "":
		a.schedule(ctx, p)
	case p.Spec.NodeName != NodeName:
	case run == nil && p.Status.Phase == corev1.PodPending:
		a.start(ctx, p)
	case run != nil:
		a.report(ctx, p, run)
	}
}

// schedule binds p to the node, or marks it unschedulable.
func (a *Agent) schedule(ctx context.Context, p *corev1.Pod) {
	if a.opts.Unschedulable != nil && a.opts.Unschedulable(p) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return
			}
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient memory.", LastTransitionTime: metav1.Now()})
		_, _ = a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: NodeName}}
	_ = a.cs.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
}

// start runs p's first container.
func (a *Agent) start(ctx context.Context, p *corev1.Pod) {
	key := p.Namespace + "/" + p.Name
	a.mu.Lock()
	ip := "127.0.0." + strconv.Itoa(a.nextIP)
	a.nextIP++
	a.mu.Unlock()
	run := &podRun{key: key, uid: string(p.UID), ip: ip, logs: newLogBuffer(), exited: make(chan struct{})}
	if err := a.spawn(ctx, p, run); err != nil {
		a.fail(ctx, p, "CreateContainerError", err.Error())
		return
	}
	a.mu.Lock()
	a.pods[key] = run
	a.mu.Unlock()
	a.report(ctx, p, run)
}

// spawn starts the container's process for run.
func (a *Agent) spawn(ctx context.Context, p *corev1.Pod, run *podRun) error {
	if len(p.Spec.Containers) == 0 {
		return errors.New("no container")
	}
	c := p.Spec.Containers[0]
	exe, ok := a.executable(c.Image)
	if !ok {
		return fmt.Errorf("image %q is not in AgentOptions.Images", c.Image)
	}
	podDir := filepath.Join(a.dir, p.Namespace+"_"+p.Name+"_"+strconv.Itoa(int(run.restarts)))
	mounts, err := a.materialise(ctx, p, c, podDir)
	if err != nil {
		return err
	}
	env, err := a.env(ctx, p, c, run.ip)
	if err != nil {
		return err
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(c.Command) > 0 && strings.HasPrefix(c.Command[0], "/") {
		argv = argv[1:] // the image's entrypoint path: the local executable stands in
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	for i, arg := range argv {
		argv[i] = rewriteMounts(expandVars(arg, vars), mounts)
	}
	cmd := exec.Command(exe, argv...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = podDir
	cmd.Stdout, cmd.Stderr = run.logs.writer(), run.logs.writer()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", exe, err)
	}
	a.mu.Lock()
	run.cmd, run.started = cmd, time.Now()
	a.mu.Unlock()
	a.wg.Go(func() {
		err := cmd.Wait()
		run.logs.close()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			run.exitCode = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				run.exitCode = 128 + int(ws.Signal())
			}
		default:
			run.exitCode = 1
		}
		close(run.exited)
	})
	return nil
}

// executable is the local program standing in for image.
func (a *Agent) executable(image string) (string, bool) {
	name := image
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	if exe, ok := a.opts.Images[name]; ok {
		return exe, true
	}
	exe, ok := a.opts.Images[name[strings.LastIndex(name, "/")+1:]]
	return exe, ok
}

// materialise writes p's ConfigMap volumes that c mounts under dir and
// returns each mount path with the directory standing in for it.
func (a *Agent) materialise(ctx context.Context, p *corev1.Pod, c corev1.Container, dir string) (map[string]string, error) {
	mounts := map[string]string{}
	for _, vm := range c.VolumeMounts {
		for _, v := range p.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil {
				continue
			}
			cm, err := a.cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Name, err)
			}
			local := filepath.Join(dir, "volumes", v.Name)
			if err := os.MkdirAll(local, 0o755); err != nil {
				return nil, err
			}
			for k, val := range cm.Data {
				if err := os.WriteFile(filepath.Join(local, k), []byte(val), 0o644); err != nil {
					return nil, err
				}
			}
			mounts[vm.MountPath] = local
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return mounts, nil
}

// env resolves c's environment as the kubelet does: values, the downward
// API (fieldRef) and ConfigMap and Secret keys.
func (a *Agent) env(ctx context.Context, p *corev1.Pod, c corev1.Container, ip string) ([]string, error) {
	var out []string
	vars := map[string]string{}
	for _, e := range c.Env {
		v := expandVars(e.Value, vars)
		if f := e.ValueFrom; f != nil {
			switch {
			case f.FieldRef != nil:
				v = fieldValue(p, f.FieldRef.FieldPath, ip)
			case f.ConfigMapKeyRef != nil:
				cm, err := a.cs.CoreV1().ConfigMaps(p.Namespace).Get(ctx, f.ConfigMapKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
				v = cm.Data[f.ConfigMapKeyRef.Key]
			case f.SecretKeyRef != nil:
				s, err := a.cs.CoreV1().Secrets(p.Namespace).Get(ctx, f.SecretKeyRef.Name, metav1.GetOptions{})
				if err != nil {
					return nil, fmt.Errorf("env %s: %w", e.Name, err)
				}
				v = string(s.Data[f.SecretKeyRef.Key])
			}
		}
		vars[e.Name] = v
		out = append(out, e.Name+"="+v)
	}
	return out, nil
}

// fieldValue is a downward-API field of p.
func fieldValue(p *corev1.Pod, path, ip string) string {
	switch {
	case path == "metadata.name":
		return p.Name
	case path == "metadata.namespace":
		return p.Namespace
	case path == "status.podIP":
		return ip
	case path == "spec.nodeName":
		return NodeName
	case strings.HasPrefix(path, "metadata.annotations['"):
		return p.Annotations[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.annotations['"), "']")]
	case strings.HasPrefix(path, "metadata.labels['"):
		return p.Labels[strings.TrimSuffix(strings.TrimPrefix(path, "metadata.labels['"), "']")]
	}
	return ""
}

// expandVars replaces $(NAME) with vars[NAME] where it is defined and $$
// with $, as Kubernetes expands a container's command, args and env.
func expandVars(s string, vars map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			if j := strings.IndexByte(s[i:], ')'); j > 0 {
				if v, ok := vars[s[i+2:i+j]]; ok {
					b.WriteString(v)
					i += j
					continue
				}
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// rewriteMounts replaces a mount path at the start of arg (or after an
// '=') with the local directory standing in for it.
func rewriteMounts(arg string, mounts map[string]string) string {
	for mp, local := range mounts {
		if arg == mp || strings.HasPrefix(arg, mp+"/") {
			return local + arg[len(mp):]
		}
		if k, v, ok := strings.Cut(arg, "="); ok && (v == mp || strings.HasPrefix(v, mp+"/")) {
			return k + "=" + local + v[len(mp):]
		}
	}
	return arg
}

// report writes run's state into p's status when it changed: Running, or
// its end (Succeeded, Failed), restarting it when the policy says so.
func (a *Agent) report(ctx context.Context, p *corev1.Pod, run *podRun) {
	c := p.Spec.Containers[0]
	select {
	case <-run.exited:
	default:
		if p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == run.restarts {
			return
		}
		st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true), RestartCount: run.restarts,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(run.started)}}}
		a.setStatus(ctx, p, corev1.PodRunning, "", run.ip, st, true)
		return
	}
	a.mu.Lock()
	reported, reason := run.reported, run.killReason
	a.mu.Unlock()
	if reported {
		return
	}
	if reason == "" {
		reason = "Completed"
		if run.exitCode != 0 {
			reason = "Error"
		}
	}
	policy := p.Spec.RestartPolicy
	if reason != "Evicted" && (policy == corev1.RestartPolicyAlways || policy == corev1.RestartPolicyOnFailure && run.exitCode != 0) {
		run.restarts++
		run.exited = make(chan struct{})
		run.logs = newLogBuffer()
		a.mu.Lock()
		run.killReason = ""
		a.mu.Unlock()
		if err := a.spawn(ctx, p, run); err != nil {
			a.fail(ctx, p, "CreateContainerError", err.Error())
		}
		return
	}
	phase := corev1.PodSucceeded
	if run.exitCode != 0 || reason == "Evicted" {
		phase = corev1.PodFailed
	}
	st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, RestartCount: run.restarts, Started: ptr(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: int32(run.exitCode), Reason: reason,
			StartedAt: metav1.NewTime(run.started), FinishedAt: metav1.Now()}}}
	podReason := ""
	if reason == "Evicted" {
		podReason = "Evicted"
	}
	if a.setStatus(ctx, p, phase, podReason, run.ip, st, false) == nil {
		a.mu.Lock()
		run.reported = true
		a.mu.Unlock()
	}
}

func (a *Agent) setStatus(ctx context.Context, p *corev1.Pod, phase corev1.PodPhase, reason, ip string, st corev1.ContainerStatus, ready bool) error {
	p = p.DeepCopy()
	now := metav1.Now()
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	p.Status.Phase, p.Status.Reason = phase, reason
	p.Status.HostIP, p.Status.PodIP = "127.0.0.1", ip
	p.Status.HostIPs, p.Status.PodIPs = []corev1.HostIP{{IP: "127.0.0.1"}}, []corev1.PodIP{{IP: ip}}
	if p.Status.StartTime == nil {
		p.Status.StartTime = &now
	}
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: readyStatus, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{st}
	_, err := a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

func (a *Agent) fail(ctx context.Context, p *corev1.Pod, reason, msg string) {
	c := p.Spec.Containers[0]
	st := corev1.ContainerStatus{Name: c.Name, Image: c.Image, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
	_ = a.setStatus(ctx, p, corev1.PodPending, "", "", st, false)
}

// terminate stops a deleted pod's process as the kubelet does (SIGTERM,
// its grace period, SIGKILL) and then removes the pod object.
func (a *Agent) terminate(ctx context.Context, p *corev1.Pod, run *podRun) {
	if p.Spec.NodeName != NodeName && p.Spec.NodeName != "" {
		return
	}
	if run != nil && run.cmd != nil {
		select {
		case <-run.exited:
		default:
			_ = run.cmd.Process.Signal(syscall.SIGTERM)
			grace := 30 * time.Second
			if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
				grace = time.Duration(*g) * time.Second
			}
			if p.DeletionTimestamp.Add(grace).Before(time.Now()) {
				_ = syscall.Kill(-run.cmd.Process.Pid, syscall.SIGKILL)
			}
			return // check again on the next pass
		}
	}
	zero := int64(0)
	err := a.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err == nil || apierrors.IsNotFound(err) {
		a.mu.Lock()
		delete(a.pods, p.Namespace+"/"+p.Name)
		a.mu.Unlock()
	}
}

// Kill kills pod namespace/name's process at once (SIGKILL), to be
// reported as terminated with reason (OOMKilled, as the kernel's OOM
// killer would, exit 137).
func (a *Agent) Kill(namespace, name, reason string) error {
	a.mu.Lock()
	run := a.pods[namespace+"/"+name]
	if run != nil {
		run.killReason = reason
	}
	var cmd *exec.Cmd
	if run != nil {
		cmd = run.cmd
	}
	a.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("pod %s/%s is not running here", namespace, name)
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// Evict kills pod namespace/name and reports it Failed, reason Evicted.
func (a *Agent) Evict(namespace, name string) error { return a.Kill(namespace, name, "Evicted") }

// DropLogStreams closes every open follow stream of pod namespace/name's
// logs once, between two lines, as a dropped connection would.
func (a *Agent) DropLogStreams(namespace, name string) error {
	a.mu.Lock()
	run := a.pods[namespace+"/"+name]
	a.mu.Unlock()
	if run == nil {
		return fmt.Errorf("pod %s/%s is not running here", namespace, name)
	}
	run.logs.drop()
	return nil
}

// Process is the pid of pod namespace/name's process.
func (a *Agent) Process(namespace, name string) (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	run := a.pods[namespace+"/"+name]
	if run == nil || run.cmd == nil {
		return 0, false
	}
	return run.cmd.Process.Pid, true
}

// killAll kills every process the agent started and waits for them.
func (a *Agent) killAll() {
	a.mu.Lock()
	runs := maps.Clone(a.pods)
	a.mu.Unlock()
	for _, run := range runs {
		if run.cmd != nil {
			_ = syscall.Kill(-run.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	for _, run := range runs {
		if run.cmd != nil {
			<-run.exited
		}
	}
}

func ptr[T any](v T) *T { return &v }
