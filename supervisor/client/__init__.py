"""The typed client library: find a running daemon, make requests, follow sessions."""

from supervisor.client.api import Client as Client
from supervisor.client.api import open_client as open_client
from supervisor.client.follow import follow_session as follow_session
