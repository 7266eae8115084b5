"""Deploying TaaS: the Helm chart rendered and linted, its CRD and install.yaml in sync, RBAC
on a real apiserver, the Dockerfile linted and the images built."""
