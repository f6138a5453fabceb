"""Processes and sockets: the pod's server and client, the pod process, the host and the fleet."""
