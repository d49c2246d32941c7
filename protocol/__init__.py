"""corral's wire: every message as a msgspec Struct, codecs and framers. Pure: no I/O, no trio."""

from .base import PROTOCOL_VERSION as PROTOCOL_VERSION
from .base import format_ts as format_ts
from .codec import FrameError as FrameError
from .codec import decode_hello as decode_hello
from .codec import decode_request as decode_request
from .codec import decode_server_frame as decode_server_frame
from .codec import encode as encode
from .errors import CorralError as CorralError
from .errors import ErrorCode as ErrorCode
from .errors import error_from_wire as error_from_wire
from .events import Event as Event
from .framing import ContentLengthFramer as ContentLengthFramer
from .framing import Framer as Framer
from .framing import LengthPrefixFramer as LengthPrefixFramer
from .framing import NdjsonFramer as NdjsonFramer
from .messages import ClientRequest as ClientRequest
from .messages import EventFrame as EventFrame
from .messages import ServerFrame as ServerFrame
from .models import Detection as Detection
from .models import SessionInfo as SessionInfo
from .schema import client_protocol_schema as client_protocol_schema
