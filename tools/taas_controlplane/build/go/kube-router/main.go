// Command kube-router runs upstream kube-router's NetworkPolicy firewall, built from Go modules.
//
// It wires kube-router's own NetworkPolicyController (pkg/controllers/netpol) exactly as
// kube-router's `--run-firewall` does in pkg/cmd (same flags, same informers, same cache sync),
// and nothing else: upstream's main also links the BGP router (gobgp) and the IPVS service
// proxy, which this cluster does not run and which would double the build. A wrapper module at
// all because `go install ...@v1.6.1` asks the proxy for the module's version list, which it
// refuses.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/cloudnativelabs/kube-router/pkg/controllers/netpol"
	"github.com/cloudnativelabs/kube-router/pkg/healthcheck"
	"github.com/cloudnativelabs/kube-router/pkg/options"
	"github.com/spf13/pflag"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "%s\n", err)
		os.Exit(1)
	}
}

func run() error {
	klog.InitFlags(nil)
	config := options.NewKubeRouterConfig()
	config.AddFlags(pflag.CommandLine)
	pflag.Parse()
	if err := flag.CommandLine.Parse([]string{}); err != nil {
		return err
	}
	if err := flag.Set("logtostderr", "true"); err != nil {
		return err
	}
	if err := flag.Set("v", config.VLevel); err != nil {
		return err
	}
	if config.HelpRequested {
		pflag.Usage()
		return nil
	}
	if !config.RunFirewall || config.RunRouter || config.RunServiceProxy {
		return fmt.Errorf("this build runs the firewall only: pass --run-firewall=true " +
			"--run-router=false --run-service-proxy=false")
	}
	restConfig, err := clientcmd.BuildConfigFromFlags(config.Master, config.Kubeconfig)
	if err != nil {
		return fmt.Errorf("failed to build the client configuration: %v", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("failed to create the Kubernetes client: %v", err)
	}

	stopCh := make(chan struct{})
	factory := informers.NewSharedInformerFactory(client, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	nsInformer := factory.Core().V1().Namespaces().Informer()
	npInformer := factory.Networking().V1().NetworkPolicies().Informer()
	factory.Start(stopCh)
	synced := make(chan struct{})
	go func() {
		factory.WaitForCacheSync(stopCh)
		close(synced)
	}()
	select {
	case <-time.After(config.CacheSyncTimeout):
		return fmt.Errorf("failed to synchronize cache: %s timeout", config.CacheSyncTimeout)
	case <-synced:
	}

	var ipsetMutex sync.Mutex
	npc, err := netpol.NewNetworkPolicyController(
		client, config, podInformer, npInformer, nsInformer, &ipsetMutex)
	if err != nil {
		return fmt.Errorf("failed to create network policy controller: %v", err)
	}
	podInformer.AddEventHandler(npc.PodEventHandler)
	nsInformer.AddEventHandler(npc.NamespaceEventHandler)
	npInformer.AddEventHandler(npc.NetworkPolicyEventHandler)

	// Heartbeats go to kube-router's health controller upstream; here nobody listens.
	healthChan := make(chan *healthcheck.ControllerHeartbeat, 10)
	go func() {
		for range healthChan {
		}
	}()
	var wg sync.WaitGroup
	wg.Add(1)
	go npc.Run(healthChan, stopCh, &wg)

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	klog.Info("shutting down the network policy controller")
	close(stopCh)
	wg.Wait()
	return nil
}
