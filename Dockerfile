# syntax=docker/dockerfile:1
# Pilothouse: a static binary on distroless, as a non-root user, data in /data.
#   docker build -t pilothouse .
#   docker compose up -d          (see docker-compose.yml)

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
# No shell or curl in distroless: the binary checks http://127.0.0.1:8080/healthz itself.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 CMD ["/pilothouse", "healthcheck"]
ENTRYPOINT ["/pilothouse"]
CMD ["serve"]
