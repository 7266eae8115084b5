// Command kube-router runs upstream kube-router (its NetworkPolicy firewall), built from Go
// modules: upstream's main (cmd/kube-router) minus the pprof server. A wrapper module because
// `go install ...@v1.6.1` asks the proxy for the module's version list, which it refuses.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cloudnativelabs/kube-router/pkg/cmd"
	"github.com/cloudnativelabs/kube-router/pkg/options"
	"github.com/cloudnativelabs/kube-router/pkg/version"
	"github.com/spf13/pflag"
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
		return fmt.Errorf("failed to parse flags: %s", err)
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
	if config.Version {
		version.PrintVersion(false)
		return nil
	}
	if config.CleanupConfig {
		cmd.CleanupConfigAndExit()
		return nil
	}
	kubeRouter, err := cmd.NewKubeRouterDefault(config)
	if err != nil {
		return fmt.Errorf("failed to parse kube-router config: %v", err)
	}
	return kubeRouter.Run()
}
