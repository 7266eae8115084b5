# syntax=docker/dockerfile:1
# TaaS images, built from one wheel of this repository.
#
#   docker build --target operator -t taas-operator:0.1.0 .
#       The operator (`taas operator`): kopf + the Kubernetes client, no TensorFlow.
#   docker build --target trainer -t taas-trainer:0.1.0 .
#       The trainer library and examples/ on TensorFlow (CPU); entrypoint `python`.
#   docker build --target trainer -t taas-trainer:0.1.0-gpu \
#       --build-arg BASE_IMAGE=tensorflow/tensorflow:2.21.0-gpu --build-arg TF_EXTRA=gpu .
#       The same on a GPU base image (any image with Python >= 3.11 and pip).

ARG PYTHON_IMAGE=python:3.11-slim
ARG BASE_IMAGE=python:3.11-slim
# PIP_CONFIG_FILE (declared in each stage that runs pip, unset by default): a pip config for the
# build, e.g. an offline wheel directory. `taas-controlplane images` passes one (find-links to its
# wheel cache, no index), so its image builds run without the network.

# ---- build: one wheel of the repository (operator, trainer and control-plane tools) ----------
FROM ${PYTHON_IMAGE} AS build
ARG PIP_CONFIG_FILE
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
COPY trainer/ trainer/
COPY tools/ tools/
RUN python -m pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

# ---- operator: the wheel without the tensorflow extra, run as a non-root user ----------------
FROM ${PYTHON_IMAGE} AS operator
ARG PIP_CONFIG_FILE
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    python -m pip install --no-cache-dir /wheels/taas-*.whl \
    && useradd --uid 65532 --user-group --no-create-home --shell /usr/sbin/nologin taas
USER 65532:65532
ENTRYPOINT ["taas"]
CMD ["operator"]

# ---- trainer: the wheel with TensorFlow, examples/ in /app, run as a non-root user -----------
FROM ${BASE_IMAGE} AS trainer
# `tensorflow` installs the tensorflow wheel (tf-keras requires it) with tf-keras and tensorboard;
# `gpu` installs tensorflow[and-cuda] instead (already present on tensorflow/tensorflow:*-gpu
# images, so nothing is downloaded twice).
ARG TF_EXTRA=tensorflow
ARG PIP_CONFIG_FILE
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# DL3013 reads the local wheel `<path>[extra]` as an unpinned package; its version is the wheel's.
# hadolint ignore=DL3013
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    wheel="$(ls /wheels/taas-*.whl)" \
    && python -m pip install --no-cache-dir "${wheel}[${TF_EXTRA}]" \
    && useradd --uid 1000 --user-group --create-home --shell /bin/bash taas
# Your code goes in /app too, owned by 1000 (an image FROM this one: examples/your_image).
LABEL org.opencontainers.image.description="TaaS trainer: Python 3.11, TensorFlow and the taas library; runs as uid 1000 in /app (examples/ there); put your code in /app, see docs/your-code.md"
WORKDIR /app
COPY --chown=1000:1000 examples/ examples/
USER 1000:1000
ENTRYPOINT ["python"]
