import './base.css';
import './scorep.css';
