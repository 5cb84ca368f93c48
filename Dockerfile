# syntax=docker/dockerfile:1.12
# One static binary, two roles: `webhooks serve` (API) and `webhooks worker`.
# Build: docker build --build-arg VERSION=$(git describe --always) -t webhooks .

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=linux go build -trimpath \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/webhooks ./cmd/webhooks

# distroless/static: CA certificates and tzdata, no shell, uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/webhooks /usr/local/bin/webhooks
USER nonroot:nonroot
# HTTP_ADDR and ADMIN_ADDR must bind 0.0.0.0 in a container; the compose
# file sets them.
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/webhooks"]
CMD ["serve"]
