## modules/mpi/local.mk - the communication module over MPI (configure
## --with-mpi; see modules/local.mk for the pattern).  Loadable only:
## it installs as tessera-comm-mpi, which the registry never loads in
## its scans, only when a program opens a communicator (tessera/comm.h),
## so MPI is linked into this module and nowhere else.

mpi_sources = modules/mpi/mpi-module.c

if TSR_BACKEND_MPI
noinst_LTLIBRARIES += modules/mpi/libtsr-mpi.la
modules_mpi_libtsr_mpi_la_SOURCES = $(mpi_sources)
modules_mpi_libtsr_mpi_la_CPPFLAGS = $(AM_CPPFLAGS) $(TSR_BACKEND_CPPFLAGS) \
	-DTSR_MODULE_NAME=tessera_comm_mpi $(MPI_CFLAGS)
modules_mpi_libtsr_mpi_la_CFLAGS = $(TSR_BACKEND_CFLAGS)
modules_mpi_libtsr_mpi_la_LIBADD = $(MPI_LIBS) $(MPI_DL_LIBS)
backend_LTLIBRARIES += modules/mpi/tessera-comm-mpi.la
modules_mpi_tessera_comm_mpi_la_SOURCES =
modules_mpi_tessera_comm_mpi_la_LDFLAGS = $(TSR_MODULE_LDFLAGS)
modules_mpi_tessera_comm_mpi_la_LIBADD = modules/mpi/libtsr-mpi.la \
	$(TSR_MODULE_LIBS)
endif

EXTRA_DIST += $(mpi_sources) modules/mpi/tsr-mpi.m4 testsuite/tessera.mpi
