package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podRun is one pod bound to the agent. Every field is guarded by the
// agent's mu.
type podRun struct {
	uid        types.UID
	ip         string
	dir        string
	containers []*containerRun
	started    bool        // every container was launched once
	waiting    *startError // why they were not, yet
	evicted    bool
	deleting   bool      // the pod has a deletionTimestamp
	termSent   time.Time // when the deletion's SIGTERM went out
	killSent   bool      // the grace period ended: SIGKILL went out
	deleted    bool      // the grace-0 delete was accepted
	final      bool      // a terminal phase was written
	lastSig    string    // the status last written, summarised
}

// containerRun is one container of a pod: its launch and its instances
// (one per start; a restart makes a new one).
type containerRun struct {
	spec     corev1.Container
	launch   launch
	cur      *instance                        // nil before the first start
	prevLogs *logBuffer                       // the instance before cur's output (previous=true)
	handled  bool                             // cur's exit was acted on
	restarts int32                            // kubelet's restartCount
	restart  time.Time                        // when the restart is due; zero: none
	last     *corev1.ContainerStateTerminated // the previous instance's end: lastState
	term     *corev1.ContainerStateTerminated // the container's end: terminated for good
	logs     *logBuffer                       // cur's output (an empty one before any start)
}

// instance is one process of a container.
type instance struct {
	cmd        *exec.Cmd
	startedAt  time.Time
	exited     chan struct{} // closed once the process is reaped and its output read
	exitCode   int           // set before exited is closed
	finishedAt time.Time     // set before exited is closed
	killReason string        // the reason Kill or Evict gave; guarded by the agent's mu
}

func (in *instance) done() bool {
	select {
	case <-in.exited:
		return true
	default:
		return false
	}
}

func (cr *containerRun) running() bool { return cr.cur != nil && !cr.cur.done() }

// newRun is the agent's state for pod p, with the next loopback address;
// a.mu is held.
func (a *Agent) newRun(p *corev1.Pod) *podRun {
	n := a.nextIP
	a.nextIP++
	run := &podRun{
		uid: p.UID,
		ip:  net.IPv4(127, byte(n>>16), byte(n>>8), byte(n)).String(),
		dir: filepath.Join(a.dir, p.Namespace+"_"+p.Name+"_"+string(p.UID)[:8]),
	}
	for _, c := range p.Spec.Containers {
		run.containers = append(run.containers, &containerRun{spec: c, logs: newLogBuffer()})
	}
	return run
}

// sync brings run one step on: it launches the containers the first time
// it can, acts on exits (restart or the end), and writes the pod's status
// when it changed.
func (a *Agent) sync(ctx context.Context, p *corev1.Pod, run *podRun) {
	a.mu.Lock()
	launchNow := !run.started && !run.deleting && !run.evicted
	a.mu.Unlock()
	if launchNow {
		launches, err := a.prepare(ctx, p, run)
		a.mu.Lock()
		var se *startError
		switch {
		case errors.As(err, &se):
			run.waiting = se
		case err != nil:
			run.waiting = &startError{reason: "CreateContainerError", err: err}
		default:
			run.waiting = nil
			run.started = true
			for i, cr := range run.containers {
				cr.launch = launches[i]
				a.spawn(run, cr)
			}
		}
		a.mu.Unlock()
	}
	a.mu.Lock()
	if run.final {
		a.mu.Unlock()
		return
	}
	a.advance(p, run, time.Now())
	status, sig := podStatus(p, run, time.Now())
	write := sig != run.lastSig || p.Status.Phase != status.Phase
	a.mu.Unlock()
	if !write {
		return
	}
	np := p.DeepCopy()
	np.Status = status
	if _, err := a.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, np, metav1.UpdateOptions{}); err != nil {
		return // a conflict or a pod gone: the next pass sees the pod as it is
	}
	a.mu.Lock()
	run.lastSig = sig
	run.final = status.Phase == corev1.PodSucceeded || status.Phase == corev1.PodFailed
	a.mu.Unlock()
}

// prepare resolves every container's launch: its executable, arguments,
// environment and volumes (materialised once per pod).
func (a *Agent) prepare(ctx context.Context, p *corev1.Pod, run *podRun) ([]launch, error) {
	if len(p.Spec.InitContainers) > 0 {
		return nil, &startError{reason: "CreateContainerError", err: errors.New("the kubetest agent runs no init containers")}
	}
	volumes, err := materialise(ctx, a.cs, p, run.dir)
	if err != nil {
		return nil, err
	}
	base := append([]string{"PATH=" + hostPath(), "HOME=" + run.dir, "HOSTNAME=" + p.Name,
		"KUBERNETES_SERVICE_HOST=" + a.apiHost, "KUBERNETES_SERVICE_PORT=" + a.apiPort, "KUBERNETES_SERVICE_PORT_HTTPS=" + a.apiPort},
		a.opts.Env...)
	var out []launch
	for _, c := range p.Spec.Containers {
		exe, ok := imageExecutable(a.opts.Images, c.Image)
		if !ok {
			return nil, &startError{reason: "ErrImagePull", err: fmt.Errorf("container %s: image %q is not in the kubetest agent's AgentOptions.Images", c.Name, c.Image)}
		}
		args, err := containerArgs(exe, c)
		if err != nil {
			return nil, &startError{reason: "CreateContainerError", err: err}
		}
		mounts := containerMounts(c, volumes)
		env, err := containerEnv(ctx, a.cs, p, c, run.ip, base, mounts)
		if err != nil {
			return nil, err
		}
		vars := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
		for i, arg := range args {
			args[i] = rewritePath(expandVars(arg, vars), mounts)
		}
		dir := run.dir
		if c.WorkingDir != "" {
			dir = rewritePath(c.WorkingDir, mounts)
		}
		if err := os.MkdirAll(run.dir, 0o755); err != nil {
			return nil, err
		}
		out = append(out, launch{exe: exe, args: args, env: env, dir: dir})
	}
	return out, nil
}

// spawn starts a new instance of cr; a.mu is held. A start that fails
// ends the container as the runtime's StartError would (exit 128).
func (a *Agent) spawn(run *podRun, cr *containerRun) {
	in := &instance{exited: make(chan struct{})}
	if cr.cur != nil {
		cr.prevLogs = cr.logs
		cr.logs = newLogBuffer()
	}
	cr.cur, cr.handled = in, false
	logs := cr.logs
	fail := func(err error) {
		logs.append("stderr", []byte("kubetest agent: "+err.Error()+"\n"))
		logs.close()
		in.exitCode, in.finishedAt, in.killReason = 128, time.Now(), "StartError"
		close(in.exited)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		fail(err)
		return
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _ = outR.Close(), outW.Close()
		fail(err)
		return
	}
	cmd := exec.Command(cr.launch.exe, cr.launch.args...)
	cmd.Env, cmd.Dir = cr.launch.env, cr.launch.dir
	// The output goes to pipes the agent reads, not through exec's
	// copying goroutines: Wait then returns when the process exits even
	// if a child of it still holds the pipe, and the agent ends that child
	// with the group, as a container's processes end with its first.
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	_, _ = outW.Close(), errW.Close()
	if err != nil {
		_, _ = outR.Close(), errR.Close()
		fail(fmt.Errorf("cannot start %s: %w", cr.launch.exe, err))
		return
	}
	in.cmd, in.startedAt = cmd, time.Now()
	var readers sync.WaitGroup
	readers.Go(func() { logs.readFrom("stdout", outR) })
	readers.Go(func() { logs.readFrom("stderr", errR) })
	a.procs.Go(func() {
		err := cmd.Wait()
		signalGroup(cmd.Process.Pid, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { readers.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(2 * time.Second):
			// A process that left the group still holds the pipe: stop
			// reading rather than wait for it.
			_, _ = outR.Close(), errR.Close()
			<-drained
		}
		_, _ = outR.Close(), errR.Close()
		logs.close()
		in.exitCode, in.finishedAt = exitCode(cmd, err), time.Now()
		close(in.exited)
	})
}

// exitCode is the container's exit code: the process's, or 128 + the
// signal that ended it, as container runtimes report it.
func exitCode(cmd *exec.Cmd, err error) int {
	if cmd.ProcessState == nil {
		return 128
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	var ee *exec.ExitError
	if err == nil || errors.As(err, &ee) {
		return cmd.ProcessState.ExitCode()
	}
	return 128
}

// advance acts on exits at now: a container whose process ended restarts
// (after RestartDelay) when the pod's restartPolicy says so and the pod is
// neither evicted nor being deleted, else it is terminated for good; a.mu
// is held.
func (a *Agent) advance(p *corev1.Pod, run *podRun, now time.Time) {
	for _, cr := range run.containers {
		if cr.cur == nil || cr.term != nil || !cr.cur.done() {
			continue
		}
		if !cr.handled {
			cr.handled = true
			st := terminated(cr.cur)
			if !run.evicted && !run.deleting && restarts(p.Spec.RestartPolicy, st.ExitCode) {
				cr.last, cr.restart = st, now.Add(a.opts.RestartDelay)
			} else {
				cr.term, cr.restart = st, time.Time{}
			}
		}
		if cr.term == nil && (run.evicted || run.deleting) {
			cr.term, cr.restart = cr.last, time.Time{} // a restart that is no longer due
			continue
		}
		if !cr.restart.IsZero() && !now.Before(cr.restart) {
			cr.restart = time.Time{}
			cr.restarts++
			a.spawn(run, cr)
		}
	}
}

// restarts says whether a container that exited with code restarts under
// policy.
func restarts(policy corev1.RestartPolicy, code int32) bool {
	return policy == corev1.RestartPolicyAlways || policy == "" || policy == corev1.RestartPolicyOnFailure && code != 0
}

// terminated is in's end as the kubelet reports it: reason Completed (exit
// 0) or Error, unless Kill or Evict chose one (OOMKilled, …).
func terminated(in *instance) *corev1.ContainerStateTerminated {
	reason := in.killReason
	if reason == "" {
		reason = "Completed"
		if in.exitCode != 0 {
			reason = "Error"
		}
	}
	return &corev1.ContainerStateTerminated{ExitCode: int32(in.exitCode), Reason: reason,
		StartedAt: metav1.NewTime(in.startedAt), FinishedAt: metav1.NewTime(in.finishedAt)}
}

// podStatus is the status the kubelet would write for run at now, and a
// summary of it that changes only when something a reader acts on does
// (phase, states, reasons, restart counts), so that the agent writes a
// status once per change; a.mu is held.
func podStatus(p *corev1.Pod, run *podRun, now time.Time) (corev1.PodStatus, string) {
	t := metav1.NewTime(now)
	st := corev1.PodStatus{HostIP: "127.0.0.1", HostIPs: []corev1.HostIP{{IP: "127.0.0.1"}}, StartTime: p.Status.StartTime, QOSClass: p.Status.QOSClass}
	if st.StartTime == nil {
		st.StartTime = &t
	}
	if run.started {
		st.PodIP, st.PodIPs = run.ip, []corev1.PodIP{{IP: run.ip}}
	}
	var sig strings.Builder
	allReady, allEnded, allSucceeded := len(run.containers) > 0, true, true
	for _, cr := range run.containers {
		cs := corev1.ContainerStatus{Name: cr.spec.Name, Image: cr.spec.Image, ImageID: "kubetest://" + cr.launch.exe,
			RestartCount: cr.restarts, LastTerminationState: corev1.ContainerState{Terminated: cr.last}, Started: new(bool)}
		switch {
		case cr.term != nil:
			cs.State.Terminated = cr.term
			allSucceeded = allSucceeded && cr.term.ExitCode == 0
		case cr.running():
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(cr.cur.startedAt)}
			cs.Ready, *cs.Started = true, true
			cs.ContainerID = fmt.Sprintf("kubetest://%d", cr.cur.cmd.Process.Pid)
		case cr.cur != nil:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container " + cr.spec.Name}
		case run.waiting != nil:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: run.waiting.reason, Message: run.waiting.Error()}
		default:
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		allReady = allReady && cs.Ready
		allEnded = allEnded && cs.State.Terminated != nil
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
		fmt.Fprintf(&sig, "%s:%d:%t:%s;", cr.spec.Name, cr.restarts, cs.Ready, stateSummary(cs.State))
	}
	switch {
	case run.evicted && (allEnded || !run.started):
		st.Phase, st.Reason, st.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory. (kubetest agent: Agent.Evict)"
	case !run.started:
		st.Phase = corev1.PodPending
	case allEnded && allSucceeded:
		st.Phase = corev1.PodSucceeded
	case allEnded:
		st.Phase = corev1.PodFailed
	default:
		st.Phase = corev1.PodRunning
	}
	cond := func(c corev1.PodConditionType, ok bool, reason string) corev1.PodCondition {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: c, Status: s, Reason: reason, LastTransitionTime: t, LastProbeTime: metav1.Time{}}
	}
	notReady := ""
	if !allReady {
		notReady = "ContainersNotReady"
		if allEnded {
			notReady = "PodCompleted"
		}
	}
	st.Conditions = []corev1.PodCondition{
		cond(corev1.PodReadyToStartContainers, run.started && !allEnded, ""),
		cond(corev1.PodInitialized, true, ""),
		cond(corev1.PodReady, allReady, notReady),
		cond(corev1.ContainersReady, allReady, notReady),
		cond(corev1.PodScheduled, true, ""),
	}
	if run.evicted {
		st.Conditions = append(st.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "TerminationByKubelet", Message: "The node was low on resource: memory.", LastTransitionTime: t})
	}
	fmt.Fprintf(&sig, "%s:%s", st.Phase, st.Reason)
	return st, sig.String()
}

func stateSummary(s corev1.ContainerState) string {
	switch {
	case s.Terminated != nil:
		return fmt.Sprintf("terminated:%s:%d", s.Terminated.Reason, s.Terminated.ExitCode)
	case s.Running != nil:
		return "running"
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason + ":" + s.Waiting.Message
	}
	return ""
}

// terminate stops a deleted pod as the kubelet does: SIGTERM to each
// container's process, then, when the grace period (the deletion's, else
// the pod's terminationGracePeriodSeconds, else 30 s) has passed, SIGKILL
// to its process group; once none runs, it writes the final status and
// deletes the pod object with grace 0.
func (a *Agent) terminate(ctx context.Context, p *corev1.Pod, run *podRun) {
	a.mu.Lock()
	if run == nil {
		run = a.newRun(p)
		run.started = true // nothing to start: a pod the agent never ran
		a.pods[p.Namespace+"/"+p.Name] = run
	}
	run.deleting = true
	live := false
	for _, cr := range run.containers {
		live = live || cr.running()
	}
	now := time.Now()
	switch {
	case live && run.termSent.IsZero():
		run.termSent = now
		for _, cr := range run.containers {
			if cr.running() {
				_ = cr.cur.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
	case live && !run.killSent && now.Sub(run.termSent) >= gracePeriod(p):
		run.killSent = true
		run.killAll("")
	}
	deleted := run.deleted
	a.mu.Unlock()
	if live || deleted {
		return
	}
	a.sync(ctx, p, run)
	zero := int64(0)
	uid := p.UID
	err := a.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err == nil || apierrors.IsNotFound(err) {
		a.mu.Lock()
		run.deleted = true
		a.mu.Unlock()
	}
}

// gracePeriod is how long a deleted pod's processes get between SIGTERM
// and SIGKILL.
func gracePeriod(p *corev1.Pod) time.Duration {
	switch {
	case p.DeletionGracePeriodSeconds != nil:
		return time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
	case p.Spec.TerminationGracePeriodSeconds != nil:
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// killAll SIGKILLs the process group of every running container, marking
// each instance's end with reason (when not empty), and says whether any
// ran; a.mu is held.
func (run *podRun) killAll(reason string) bool {
	any := false
	for _, cr := range run.containers {
		if cr.running() {
			any = true
			if reason != "" {
				cr.cur.killReason = reason
			}
			signalGroup(cr.cur.cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	return any
}
