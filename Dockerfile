# Image of the storeopt worker and starter (both binaries; the entrypoint is the worker).
#   docker build -t storeopt .
#   docker run --rm storeopt                          # worker
#   docker run --rm --entrypoint starter storeopt report
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ ./worker ./starter

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/worker /out/starter /usr/local/bin/
USER nonroot
ENTRYPOINT ["/usr/local/bin/worker"]
