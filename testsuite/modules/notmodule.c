/* A plain shared library: no Tessera descriptor.  */
int tessera_notmodule_answer (void);

int
tessera_notmodule_answer (void)
{
  return 42;
}
