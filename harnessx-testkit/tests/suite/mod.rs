mod pg_cluster;
