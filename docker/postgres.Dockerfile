# PostgreSQL 15 (Debian bookworm's packages) with pgvector built from Debian's source package for
# plain x86-64 (scripts/install_pgvector.sh): runs on every x86-64 CPU. Built by `make image`.
FROM citedocs-debian:bookworm
COPY install_pgvector.sh postgres-entrypoint.sh /usr/local/bin/
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && /usr/local/bin/install_pgvector.sh \
 # the compiler and headers were only needed to build pgvector
 && apt-get purge -y -qq --auto-remove postgresql-server-dev-15 build-essential dpkg-dev curl >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* \
 && mkdir -p /var/lib/postgresql/data && chown postgres:postgres /var/lib/postgresql/data
ENV PGDATA=/var/lib/postgresql/data/pgdata
USER postgres
VOLUME /var/lib/postgresql/data
EXPOSE 5432
HEALTHCHECK --interval=5s --timeout=5s --retries=10 \
  CMD ["/usr/lib/postgresql/15/bin/pg_isready", "-h", "127.0.0.1", "-p", "5432"]
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
