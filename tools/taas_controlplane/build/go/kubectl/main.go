// Command kubectl runs the upstream kubectl, built from Go modules: the main of
// k8s.io/kubernetes v1.34.4's cmd/kubectl, whose code lives in the k8s.io/kubectl module.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Import to initialize client auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	// Verbosity is set before the command is built, so klog works while plugins and the
	// .kuberc file are read (upstream's reason).
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) // nolint:errcheck
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		// Pretty-print the error and exit with an error.
		util.CheckErr(err)
	}
}
