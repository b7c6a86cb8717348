import scorep.user

import instrumentation2

scorep.user.instrument_module(instrumentation2)
