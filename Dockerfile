# soakd's container image: `soakd serve` by default (the target, /metrics and
# /debug/pprof/ on :8080 with grafana/soakd.yaml mounted at
# /etc/soakd/soakd.yaml); `soakd run` works too, since the driver it starts
# is this same binary. Used by grafana/docker-compose.yml.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/soakd .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/soakd /usr/local/bin/soakd
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/soakd"]
CMD ["serve", "--config", "/etc/soakd/soakd.yaml"]
