"""The typed client library: find a running daemon, make requests, follow sessions."""

from supervisor.client.client import Client as Client
from supervisor.client.connect import open_client as open_client
from supervisor.client.follow import follow_session as follow_session
