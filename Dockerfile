# Pilothouse: a static binary on distroless, as a non-root user, data in /data.
#   docker build -t pilothouse .
#   docker compose up -d          (the README's "Quick start: Docker")
# Only the built-in Dockerfile syntax is used (no "# syntax=" line: that
# would make every BuildKit build pull a frontend image first). Both the
# classic builder (Debian's docker-compose 1.29) and BuildKit build it.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/pilothouse ./cmd/pilothouse \
 && mkdir -p /out/data /out/etc

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/pilothouse /pilothouse
# The default configuration: a real house behind Mosquitto; mount your own
# over it. It listens on 0.0.0.0:8080, so it requires PILOTHOUSE_OWNER_TOKEN.
COPY examples/pilothouse-mosquitto.yaml /etc/pilothouse/pilothouse.yaml
# /data must belong to the non-root user before the volume is created.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV PILOTHOUSE_CONFIG=/etc/pilothouse/pilothouse.yaml
VOLUME ["/data"]
EXPOSE 8080
# No shell or curl in distroless: the binary checks http://127.0.0.1:8080/healthz
# itself. Every 10 s, so "docker compose up" turns healthy about 10 s after start
# (Docker runs the first check one interval after start).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["/pilothouse", "healthcheck"]
ENTRYPOINT ["/pilothouse"]
CMD ["serve"]
