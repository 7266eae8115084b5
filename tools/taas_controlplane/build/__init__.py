"""Building: the Go binaries, the Dockerfile's images and the node's own small images; nothing
here starts a cluster.

    images.py          the operator and trainer images (the Dockerfile), built with buildah,
                       cached by their inputs, pushed with --push
    wheelhouse.py      the wheels the images install, downloaded once
    base_image.py      their Debian base image, from debootstrap
    image_store.py     buildah and podman on one private image store
    busybox_images.py  the node's own images (the pod sandbox, the toolbox), made by hand
    binaries.py        every Go binary, built once from its module into a cache keyed by version
    go/                the small wrapper modules some binaries are built from (not Python)
"""
