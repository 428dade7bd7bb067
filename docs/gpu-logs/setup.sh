#!/usr/bin/env bash
# Set-up every call's script sources on the H200: bubblewrap and libseccomp (Debian 12 packages) and
# the Python packages the machine's image lacks (jsonschema, nbformat, pyseccomp and what they need)
# travel in .jailtools, an untracked folder the device tool carries; nothing can be installed there.
mkdir -p /tmp/jt/root && cp .jailtools/* /tmp/jt/ && for f in /tmp/jt/*.deb; do dpkg -x "$f" /tmp/jt/root; done
chmod -R a+rX /tmp/jt
python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site /tmp/jt/*.whl 2>/dev/null
export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/jt/root/usr/bin:$PATH PYTHONUNBUFFERED=1
