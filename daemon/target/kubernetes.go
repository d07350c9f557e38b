package target

import (
	"context"
	"fmt"
	"math"
	"strings"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/extsample"
	"github.com/soakd/soakd/internal/kubeclient"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
)

// openReplicas opens a service's replicas in a cluster (target.kind
// kubernetes): the load goes to the Service URLs, the figures are the sum
// of the replicas' own endpoints. A replica that restarts, leaves or joins
// fails the target unless target.kubernetes.allow_restarts.
func (t *External) openReplicas(ctx context.Context, cfg *config.Config) (Target, error) {
	kd := cfg.KubernetesDrivers
	restCfg, cs, err := kubeclient.Connect(kd.Kubeconfig, kd.Context, "target.kind kubernetes (the cluster kubernetes_drivers.kubeconfig and .context name)")
	if err != nil {
		return nil, err
	}
	rs, err := openReplicaSet(ctx, cfg, restCfg, cs, t.log)
	if err != nil {
		return nil, err
	}
	t.sampler, t.replicas = rs, rs
	kc := cfg.Target.Kubernetes
	t.listenerCheck = fmt.Sprintf("not applicable: the service's replicas are the pods %s in namespace %s, each sampled at its metrics endpoint (%s)", kc.Selector, kc.Namespace, kc.ScrapeVia)
	if s, err := rs.SampleNow(ctx); err != nil {
		t.log.Warn("the first sample of the replicas is incomplete: the figures it lacks are not measured", zap.String("error", s.Error))
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = stop
	t.wg.Go(func() {
		if err := rs.Run(sctx); err != nil {
			t.failed.Set(err)
		}
	})
	reps, _ := rs.info()
	names := make([]string, len(reps))
	for i, r := range reps {
		names[i] = r.Pod
	}
	t.log.Info("target opened", zap.String("kind", cfg.Target.Kind), zap.String("replicas", strings.Join(names, ",")),
		zap.String("graphql", t.ep.GraphQL), zap.String("rest", t.ep.REST))
	return t, nil
}

// replicaInfo adds the replica set to a kind kubernetes target's info.
func (t *External) replicaInfo(info *report.TargetInfo) {
	kc := t.cfg.Kubernetes
	info.Namespace, info.Selector, info.ScrapeVia = kc.Namespace, kc.Selector, kc.ScrapeVia
	info.Replicas, info.ReplicaEvents = t.replicas.info()
	if c := t.replicas.capacityCores(); c > 0 {
		info.CPUCapacityCores = &c
	}
}

// shareOfLimits makes a replica sum's machine share a share of the
// replicas' CPU limits (capacity, in cores): a service's replicas run on
// machines soakd does not know, so "the machine" is what they may use. A
// replica without a CPU limit leaves the share not measured.
func shareOfLimits(sum *profiles.Summary, w *extsample.Window, capacity float64) {
	if sum == nil || !sum.CPUKnown {
		return
	}
	const def = "CPU seconds ÷ (window seconds × the replicas' CPU limits, summed) × 100: the share of the CPU the replicas may use"
	if capacity <= 0 {
		why := "a replica has no CPU limit, so the CPU the replicas may use is not known: set resources.limits.cpu on the replicas' containers"
		sum.CPUMachinePercent, sum.Cores = 0, 0
		if sum.NotMeasured == nil {
			sum.NotMeasured = map[string]string{}
		}
		sum.NotMeasured["cpu_machine_percent"] = why
		sum.Notes = append(sum.Notes, "cpu_machine_percent not measured: "+why)
		if w != nil {
			w.CPUMachinePercent = extsample.Figure{Name: "cpu_machine_percent", Unit: "percent", Source: w.CPUSeconds.Source, Definition: def, Reason: why}
		}
		return
	}
	sum.CPUMachinePercent = sum.CPUSeconds / (sum.WindowSeconds * capacity) * 100
	sum.Cores = int(math.Ceil(capacity))
	if w != nil {
		w.CPUMachinePercent = extsample.Figure{Name: "cpu_machine_percent", Unit: "percent", Measured: true, Source: w.CPUSeconds.Source, Definition: def,
			Value: sum.CPUMachinePercent}
	}
}
