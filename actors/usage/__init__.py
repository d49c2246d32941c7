"""Usage and cost: turns, tokens, errors and dollars of every session, from their event logs.

``logscan`` (a log span → the facts of its turns), ``index`` (those facts kept beside each log,
``usage.idx``), ``pricing`` (the price table's rule, shared with the native worker),
``summary`` (the query and the sums), ``report`` (a whole state directory), ``cli``
(``corral usage``).
"""

from actors.usage.pricing import call_cost as call_cost
from actors.usage.pricing import model_name as model_name
from actors.usage.pricing import price_for as price_for
