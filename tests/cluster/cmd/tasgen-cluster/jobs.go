package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/ttlafterfinished"
)

// Workers per controller: kube-controller-manager's defaults
// (--concurrent-job-syncs, --concurrent-ttl-after-finished-syncs,
// --concurrent-gc-syncs).
const (
	jobWorkers = 5
	ttlWorkers = 5
	gcWorkers  = 20
	// How often the garbage collector and the REST mapper look at discovery
	// again (kube-controller-manager's period too): CRDs installed after start,
	// e.g. Flux's, are then collected as well.
	discoveryPeriod = 30 * time.Second
)

// startJobControllers runs kube-controller-manager's Job, TTL-after-finished
// and garbage collector controllers in this process: the upstream packages,
// built and wired as cmd/kube-controller-manager/app (batch.go, core.go,
// controllermanager.go) does, on shared informers started after every
// controller is built. The garbage collector belongs to the set: the TTL
// controller deletes a finished Job in the foreground, which only the garbage
// collector completes (it deletes the Job's Pods, then the Job's
// foregroundDeletion finalizer); without it the Job would stay Terminating
// for ever. There is no kubelet (no container runtime here): Pods the Job
// controller creates are never run unless a test plays the kubelet
// (tests/e2e/kubelet.py).
func (c *cluster) startJobControllers(ctx context.Context) error {
	// One client per controller, named as kube-controller-manager names them;
	// all with the admin's credentials (kube-controller-manager's
	// --use-service-account-credentials would give each its own account).
	client := func(agent string) (*kubernetes.Clientset, error) {
		return kubernetes.NewForConfig(rest.AddUserAgent(rest.CopyConfig(c.cfg), agent))
	}
	shared, err := client("shared-informers")
	if err != nil {
		return err
	}
	jobClient, err := client("job-controller")
	if err != nil {
		return err
	}
	ttlClient, err := client("ttl-after-finished-controller")
	if err != nil {
		return err
	}
	// No periodic resync: kube-controller-manager's is 12 to 24 hours, longer
	// than any test cluster lives.
	factory := informers.NewSharedInformerFactory(shared, 0)
	jobs, err := job.NewController(ctx, factory.Core().V1().Pods(), factory.Batch().V1().Jobs(), jobClient)
	if err != nil {
		return fmt.Errorf("creating the Job controller: %w", err)
	}
	ttl := ttlafterfinished.New(ctx, factory.Batch().V1().Jobs(), ttlClient)
	started := make(chan struct{})
	gc, all, err := c.newGarbageCollector(ctx, factory, started)
	if err != nil {
		return err
	}
	// Typed and metadata informers, as kube-controller-manager starts them:
	// once every controller has asked for its own.
	all.Start(ctx.Done())
	close(started)
	go jobs.Run(ctx, jobWorkers)
	go ttl.Run(ctx, ttlWorkers)
	// The garbage collector waits up to one discovery period for its graph
	// to sync, as kube-controller-manager's does.
	go gc.Run(ctx, gcWorkers, discoveryPeriod)
	go gc.Sync(ctx, gc.discovery, discoveryPeriod)
	return nil
}

// collector is the garbage collector with the discovery client its Sync
// reads, as kube-controller-manager's garbageCollectorController holds them.
type collector struct {
	*garbagecollector.GarbageCollector
	discovery discovery.DiscoveryInterface
}

// newGarbageCollector builds the garbage collector as kube-controller-manager
// does: a dependency graph fed by the typed informers it shares with the other
// controllers for built-in types and by metadata informers for the rest
// (CRDs), ignoring Events, over a REST mapper that forgets discovery every
// 30 s. It returns the factory of both kinds of informer, to start.
func (c *cluster) newGarbageCollector(
	ctx context.Context, typed informers.SharedInformerFactory, started <-chan struct{},
) (collector, informerfactory.InformerFactory, error) {
	cfg := rest.AddUserAgent(rest.CopyConfig(c.cfg), "generic-garbage-collector")
	// Each deletion takes two API calls: kube-controller-manager doubles the QPS.
	cfg.QPS *= 2
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return collector{}, nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return collector{}, nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	go wait.Until(mapper.Reset, discoveryPeriod, ctx.Done())
	all := informerfactory.NewInformerFactory(typed, metadatainformer.NewSharedInformerFactory(meta, 0))
	graph := garbagecollector.NewDependencyGraphBuilder(
		ctx, meta, mapper, garbagecollector.DefaultIgnoredResources(), all, started,
	)
	gc, err := garbagecollector.NewComposedGarbageCollector(ctx, cs, meta, mapper, graph)
	if err != nil {
		return collector{}, nil, fmt.Errorf("creating the garbage collector: %w", err)
	}
	return collector{gc, cs.Discovery()}, all, nil
}
