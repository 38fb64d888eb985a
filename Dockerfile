# The engine's image. One image, three commands:
#   skills worker     (the default: the worker Deployment)
#   skills setup      (the Job: search attributes and the store's schema)
#   skills telegram   (the Telegram adapter Deployment)
# Build: `make image` (or `docker build -t skills-engine .`). See docs/deploy.md.
#
# PYTHON_IMAGE is any Debian-based image with Python 3.11 as `python3` and its venv module.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
RUN python3 -m venv /opt/skills
WORKDIR /src
# The build context without tests, benchmarks, docs, deploy files and local state (.dockerignore).
# A regular (not editable) install: only the packages reach /opt/skills; /src is not in the image.
COPY . .
# The PostgreSQL driver (psycopg) is a main dependency, so SKILLS_DATABASE_URL may name a
# postgresql:// database. No dev dependencies.
# Behind a TLS-inspecting proxy, give pip the proxy's CA bundle as the build secret `pip_ca`
# (`--secret id=pip_ca,src=/etc/ssl/certs/ca-certificates.crt`); it never enters the image.
RUN --mount=type=secret,id=pip_ca \
    if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi \
 && /opt/skills/bin/pip install . \
 && /opt/skills/bin/skills --version

FROM ${PYTHON_IMAGE}
# A fixed numeric uid, so `runAsNonRoot` can check it without looking the name up.
RUN groupadd --system --gid 10001 skills \
 && useradd --system --uid 10001 --gid skills --create-home --home-dir /home/skills --shell /usr/sbin/nologin skills \
 && install -d -o skills -g skills /data /app
COPY --from=build /opt/skills /opt/skills
ENV PATH=/opt/skills/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    SKILLS_DATA_DIR=/data \
    SKILLS_LOG_FORMAT=json
# The working directory holds nothing: project SKILL.md skills would be /app/.agents/skills.
WORKDIR /app
USER 10001:10001
# The worker's health server: /healthz, /readyz and /metrics (SKILLS_HEALTH_PORT).
EXPOSE 8080
ENTRYPOINT ["skills"]
CMD ["worker"]
